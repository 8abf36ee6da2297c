#include "collectives/robust/aggregator_spec.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gradsync {
namespace {

struct Entry {
  AggregatorKind kind;
  std::string_view name;
  std::string_view parameters;
  std::string_view requirement;
  std::string_view summary;
};

constexpr std::array kEntries = {
#define GRADSYNC_AGGREGATOR(id, name, parameters, min_ranks, requirement, summary) \
  Entry{AggregatorKind::id, name, parameters, requirement, summary},
#include "collectives/robust/aggregators.def"
#undef GRADSYNC_AGGREGATOR
};

const Entry& entry_of(AggregatorKind kind) { return kEntries[static_cast<std::size_t>(kind)]; }

[[noreturn]] void refuse(std::string_view text, std::string_view why) {
  throw std::invalid_argument(fmt::format("aggregator '{}': {}", text, why));
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t comma = s.find(',', at);
    parts.push_back(s.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    if (comma == std::string_view::npos) return parts;
    at = comma + 1;
  }
}

int parse_count(std::string_view text, std::string_view part, std::string_view what) {
  int value = -1;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (ec != std::errc() || end != part.data() + part.size() || value < 0)
    refuse(text, fmt::format("{} must be a whole number >= 0, not '{}'", what, part));
  return value;
}

double parse_real(std::string_view text, std::string_view part, std::string_view what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (ec != std::errc() || end != part.data() + part.size() || !std::isfinite(value) || value <= 0)
    refuse(text, fmt::format("{} must be a number > 0, not '{}'", what, part));
  return value;
}

}  // namespace

std::string_view aggregator_name(AggregatorKind kind) { return entry_of(kind).name; }

std::string aggregator_names() {
  std::string out;
  for (const Entry& e : kEntries) {
    if (!out.empty()) out += ", ";
    out += e.name;
    if (!e.parameters.empty()) fmt::format_to(std::back_inserter(out), ":{}", e.parameters);
  }
  return out;
}

std::string aggregator_listing() {
  std::string lines;
  for (const Entry& e : kEntries) {
    const std::string spelled = e.parameters.empty() ? std::string(e.name) : fmt::format("{}:{}", e.name, e.parameters);
    lines += fmt::format("{}\t{}\t{}\n", spelled, e.requirement, e.summary);
  }
  return lines;
}

bool needs_distances(AggregatorKind kind) {
  return kind == AggregatorKind::krum || kind == AggregatorKind::multikrum || kind == AggregatorKind::bulyan;
}

AggregatorSpec parse_aggregator(std::string_view text, int default_f) {
  AggregatorSpec spec;
  spec.text = std::string(text);
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const Entry* found = nullptr;
  for (const Entry& e : kEntries)
    if (e.name == name) found = &e;
  if (!found) refuse(text, fmt::format("unknown aggregator '{}'; the aggregators are {}", name, aggregator_names()));
  spec.kind = found->kind;
  std::vector<std::string_view> params;
  if (colon != std::string_view::npos) params = split_commas(text.substr(colon + 1));
  const auto at_most = [&](std::size_t n) {
    if (params.size() > n)
      refuse(text, n == 0 ? std::string("takes no parameter")
                          : fmt::format("takes at most {} parameter{} ({})", n, n == 1 ? "" : "s", found->parameters));
  };
  spec.f = default_f;
  switch (spec.kind) {
    case AggregatorKind::mean:
    case AggregatorKind::median: at_most(0); break;
    case AggregatorKind::trimmed:
    case AggregatorKind::krum:
    case AggregatorKind::bulyan:
      at_most(1);
      if (!params.empty()) spec.f = parse_count(text, params[0], spec.kind == AggregatorKind::trimmed ? "B" : "F");
      break;
    case AggregatorKind::multikrum:
      at_most(2);
      if (!params.empty()) spec.f = parse_count(text, params[0], "F");
      if (params.size() == 2) {
        spec.m = parse_count(text, params[1], "M");
        if (spec.m == 0) refuse(text, "M must be at least 1");
      }
      break;
    case AggregatorKind::cclip:
      at_most(2);
      if (params.empty()) refuse(text, "needs the clipping radius: cclip:TAU (or cclip:TAU,L)");
      spec.tau = parse_real(text, params[0], "TAU");
      if (params.size() == 2) {
        spec.iterations = parse_count(text, params[1], "L");
        if (spec.iterations == 0) refuse(text, "L must be at least 1");
      }
      break;
  }
  if (spec.f < 0) refuse(text, fmt::format("the Byzantine count {} is negative", spec.f));
  return spec;
}

int min_ranks(const AggregatorSpec& spec) {
  [[maybe_unused]] const int f = spec.f;
  switch (spec.kind) {
#define GRADSYNC_AGGREGATOR(id, name, parameters, min_ranks, requirement, summary) \
  case AggregatorKind::id:                                                         \
    return min_ranks;
#include "collectives/robust/aggregators.def"
#undef GRADSYNC_AGGREGATOR
  }
  return 1;
}

AggregatorSpec resolved_for(AggregatorSpec spec, int n) {
  const Entry& e = entry_of(spec.kind);
  const int need = min_ranks(spec);
  if (n < need) {
    const char* letter = spec.kind == AggregatorKind::trimmed ? "B" : "F";
    throw std::invalid_argument(fmt::format("aggregator '{}' needs {} (with {} = {}: at least {} ranks); this run has {}",
                                            spec.text, e.requirement, letter, spec.f, need, n));
  }
  if (spec.kind == AggregatorKind::multikrum) {
    if (spec.m == 0) spec.m = n - spec.f;
    if (spec.m > n - spec.f)
      throw std::invalid_argument(fmt::format("aggregator '{}' needs M <= n - F = {} - {} = {}; M is {}", spec.text, n,
                                              spec.f, n - spec.f, spec.m));
  }
  return spec;
}

}  // namespace gradsync
