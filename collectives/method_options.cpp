#include "collectives/method_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace gradsync {

MethodOptions& MethodOptions::set(std::string_view key, std::int64_t value) {
  const auto at = std::lower_bound(items_.begin(), items_.end(), key,
                                   [](const auto& item, std::string_view k) { return item.first < k; });
  if (at != items_.end() && at->first == key)
    at->second = value;
  else
    items_.emplace(at, std::string(key), value);
  return *this;
}

std::optional<std::int64_t> MethodOptions::find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  return std::nullopt;
}

std::string MethodOptions::text() const {
  std::string s;
  for (const auto& [k, v] : items_) s += fmt::format("{}{}={}", s.empty() ? "" : ":", k, v);
  return s;
}

std::int64_t option_value(const MethodOptions& given, const MethodOption& option) {
  return given.find(option.key).value_or(option.fallback);
}

void check_method_options(std::string_view method, std::span<const MethodOption> declared, const MethodOptions& given) {
  for (const auto& [key, value] : given.items()) {
    const auto d = std::find_if(declared.begin(), declared.end(), [&](const MethodOption& o) { return o.key == key; });
    if (d == declared.end()) {
      std::string keys;
      for (const MethodOption& o : declared) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", o.key);
      throw std::invalid_argument(
          keys.empty() ? fmt::format("{}: unknown option '{}' ({} takes no options of its own)", method, key, method)
                       : fmt::format("{}: unknown option '{}' (its options: {})", method, key, keys));
    }
    if (value < d->min || value > d->max)
      throw std::invalid_argument(
          fmt::format("{}: option {}={} is out of range ({}..{}: {})", method, key, value, d->min, d->max, d->meaning));
  }
}

std::pair<std::string, MethodOptions> parse_method_spec(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  std::pair<std::string, MethodOptions> out{std::string(spec.substr(0, colon)), {}};
  for (std::size_t at = colon; at != std::string_view::npos;) {
    const std::size_t next = spec.find(':', at + 1);
    const std::string_view pair = spec.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw std::invalid_argument(fmt::format("'{}': '{}' is not key=value", spec, pair));
    const std::string_view text = pair.substr(eq + 1);
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || text.empty())
      throw std::invalid_argument(fmt::format("'{}': the value of {} is not a whole number", spec, pair.substr(0, eq)));
    out.second.set(pair.substr(0, eq), value);
    at = next;
  }
  return out;
}

std::string describe_method_options(std::span<const MethodOption> declared) {
  std::string s;
  for (const MethodOption& o : declared)
    s += fmt::format("{}{}={} ({}..{}): {}", s.empty() ? "" : "; ", o.key, o.fallback, o.min, o.max, o.meaning);
  return s;
}

}  // namespace gradsync
