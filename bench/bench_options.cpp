#include "bench/bench_options.hpp"

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>

namespace gradsync::bench {

std::size_t parse_bytes(const std::string& text, const std::string& flag) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used ? text.substr(used) : "";
  std::size_t scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = std::size_t{1} << 10;
  else if (unit == "M" || unit == "MiB")
    scale = std::size_t{1} << 20;
  else if (unit == "G" || unit == "GiB")
    scale = std::size_t{1} << 30;
  if (used == 0 || scale == 0)
    throw std::invalid_argument(fmt::format("{}: '{}' is not a size (examples: 4, 1K, 64MiB)", flag, text));
  return static_cast<std::size_t>(value) * scale;
}

std::vector<std::size_t> parse_byte_list(const std::string& text, const std::string& flag) {
  std::vector<std::size_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_bytes(item, flag));
  if (out.empty()) throw std::invalid_argument(fmt::format("{}: empty list", flag));
  return out;
}

std::string human_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (std::size_t{1} << 10) && bytes % (std::size_t{1} << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

}  // namespace gradsync::bench
