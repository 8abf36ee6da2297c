#include "trainers/config/partition_spec.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

namespace gradsync {

std::string PartitionSpec::name() const {
  switch (kind) {
    case PartitionKind::iid: return "iid";
    case PartitionKind::shards: return fmt::format("shards:{}", shards);
    case PartitionKind::dirichlet: return fmt::format("dirichlet:{}", alpha);
  }
  return "?";
}

std::optional<PartitionSpec> parse_partition(std::string_view text, std::string& problem) {
  PartitionSpec spec;
  const std::string_view why = "is iid, shards:S (S >= 1 label-sorted shards a client) or dirichlet:ALPHA (ALPHA > 0)";
  if (text == "iid") return spec;
  const std::size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon), value = colon == text.npos ? "" : text.substr(colon + 1);
  const char* end = value.data() + value.size();
  if (kind == "shards") {
    int s = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), end, s);
    if (ec == std::errc{} && ptr == end && s >= 1) return PartitionSpec{PartitionKind::shards, s, spec.alpha};
  } else if (kind == "dirichlet") {
    double a = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), end, a);
    if (ec == std::errc{} && ptr == end && a > 0 && std::isfinite(a))
      return PartitionSpec{PartitionKind::dirichlet, spec.shards, a};
  }
  problem = fmt::format("'{}' {}", text, why);
  return std::nullopt;
}

}  // namespace gradsync
