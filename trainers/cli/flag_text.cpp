#include "trainers/cli/flag_text.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <sstream>

#include "trainers/config/train_config.hpp"

namespace gradsync {

long positive_count(const std::string& text) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  return used == text.size() && !text.empty() && v > 0 ? v : 0;
}

std::vector<std::size_t> parse_widths(const std::string& text) {
  std::vector<std::size_t> widths;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const long v = positive_count(item);
    if (v == 0)
      throw CLI::ValidationError("--hidden", fmt::format("'{}' is not a comma-separated list of positive widths", text));
    widths.push_back(static_cast<std::size_t>(v));
  }
  return widths;
}

long parse_iterations(const std::string& text) {
  if (text == "auto") return TrainConfig::kAuto;
  if (text == "full") return TrainConfig::kFullPass;
  const long v = positive_count(text);
  if (v == 0)
    throw CLI::ValidationError("--iterations-per-epoch",
                               fmt::format("'{}' is not 'full', 'auto' or a positive count", text));
  return v;
}

}  // namespace gradsync
