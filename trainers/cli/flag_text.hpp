#pragma once
// train's flags whose text is more than one number: read into TrainConfig's values, each refusal naming its flag.
#include <cstddef>
#include <string>
#include <vector>

namespace gradsync {

// `text` as a positive integer, all of it, or 0 if it is not one.
long positive_count(const std::string& text);
// --hidden: comma-separated positive widths ("1024,1024"); throws CLI::ValidationError naming the flag otherwise.
std::vector<std::size_t> parse_widths(const std::string& text);
// --iterations-per-epoch: "auto" (TrainConfig::kAuto), "full" (TrainConfig::kFullPass) or a positive count; throws
// CLI::ValidationError naming the flag otherwise.
long parse_iterations(const std::string& text);

}  // namespace gradsync
