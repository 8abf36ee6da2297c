#pragma once
// An allreduce method's own options: named integers that only that method reads (the parameter server's server
// count, hier's ranks per host, a new method's knob). The method's registry entry declares each one (MethodOption:
// key, meaning, default, range) in the method's own file; AllreduceMethod::make refuses a key the method does not
// declare, or a value outside its range, naming the method and the key; the method reads its values through its
// declarations. The options any method may read (chunk, segment, window, the agreement check) stay fields of
// AllreduceOptions (allreduce.hpp). As text: "method:key=value:key=value" (parse_method_spec), which
// make_allreduce, bench_allreduce --methods and the PyTorch backend's method name accept.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsync {

struct MethodOption {
  std::string_view key;          // lower case, digits and '_'
  std::string_view meaning;      // one line, for listings
  std::int64_t fallback = 0;     // the value when none is given
  std::int64_t min = 0;          // the values allowed, min..max
  std::int64_t max = INT32_MAX;  // (the communicator may narrow them further: the method checks that when built)
};

// Given options, one value per key, kept in key order: ranks that give the same options in any order agree.
class MethodOptions {
 public:
  // Sets `key` to `value`, replacing a value given before. Returns *this, to chain.
  MethodOptions& set(std::string_view key, std::int64_t value);
  std::optional<std::int64_t> find(std::string_view key) const;
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<std::string, std::int64_t>>& items() const { return items_; }
  // "key=value:key=value" in key order ("" when empty): the text form, for labels and the agreement fingerprint.
  std::string text() const;
  bool operator==(const MethodOptions&) const = default;

 private:
  std::vector<std::pair<std::string, std::int64_t>> items_;
};

// The value of `option` in `given`, its fallback when not given. `given` is assumed checked (check_method_options).
std::int64_t option_value(const MethodOptions& given, const MethodOption& option);

// Throws std::invalid_argument, naming `method` and the key, for a key of `given` not in `declared` (listing the
// declared ones) or a value outside its range.
void check_method_options(std::string_view method, std::span<const MethodOption> declared, const MethodOptions& given);

// "name" or "name:key=value[:key=value...]" split into the name and its options. Throws std::invalid_argument on a
// pair without '=', an empty key, or a value that is not a whole number. Whether the keys exist is for the method
// (check_method_options) to say.
std::pair<std::string, MethodOptions> parse_method_spec(std::string_view spec);

// "key=default (min..max): meaning" for each of `declared`, joined by "; " (help texts and --list-methods).
std::string describe_method_options(std::span<const MethodOption> declared);

}  // namespace gradsync
