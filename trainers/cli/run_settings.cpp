#include "trainers/cli/run_settings.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/idx_identity.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/loop/data_source.hpp"

namespace gradsync {
namespace {

// flag_settings' exceptions (its contract says why each).
constexpr std::string_view kOwnFlags[] = {"--data",
                                          "--csv",
                                          "--epoch-csv",
                                          "--quiet",
                                          "--spec",
                                          "--print-run",
                                          "--list-compressors",
                                          "--list-attacks",
                                          "--list-aggregators"};
constexpr std::string_view kGivenOnlyFlags[] = {"--checkpoint"};
constexpr const char* kSharedVariables[] = {"GRADSYNC_ISA", "GRADSYNC_TUNING", "GRADSYNC_AUTO_METHODS"};

bool listed(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether from_chars reads all of `text` as a T, into `value`.
template <class T>
bool whole(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && at == end && !text.empty();
}

// A plain number in one spelling (an integer as one, any other number as the shortest text that reads back as the
// same double); anything else as it is.
std::string canonical(std::string_view text) {
  std::int64_t integer = 0;
  std::uint64_t large = 0;
  double real = 0;
  if (whole(text, integer)) return fmt::format("{}", integer);
  if (whole(text, large)) return fmt::format("{}", large);
  if (whole(text, real)) return fmt::format("{}", real);
  return std::string(text);
}

std::string option_value(const CLI::Option& option) {
  const std::vector<std::string>& results = option.results();
  if (option.get_expected_min() == 0)  // a flag: "--buckets", "--buckets=false"
    return !results.empty() && results.back() != "false" && results.back() != "0" ? "on" : "off";
  if (results.empty()) return canonical(option.get_default_str());
  std::string joined;
  for (const std::string& r : results) joined += (joined.empty() ? "" : ",") + canonical(r);
  return joined;
}

// How `value` of `s` reads in a message ("not given", "unset", or the value).
std::string value_text(const Setting& s, const std::string& value) {
  if (!value.empty()) return value;
  return s.kind == SettingKind::environment ? "unset" : "not given";
}

// `s` as its rank has it: "--lr 0.2", "GRADSYNC_TUNING=/a" or "GRADSYNC_TUNING unset", "the data's
// train-images-idx3-ubyte: 47040016 bytes, ...".
std::string setting_text(const Setting& s) {
  switch (s.kind) {
    case SettingKind::environment:
      return s.value.empty() ? fmt::format("{} unset", s.name) : fmt::format("{}={}", s.name, s.value);
    case SettingKind::data: return fmt::format("the data's {}: {}", s.name, s.value);
    case SettingKind::flag: break;
  }
  return fmt::format("{} {}", s.name, value_text(s, s.value));
}

// The next field of `text` at `at`: "<length>:<bytes>".
std::string take_field(std::string_view text, std::size_t& at) {
  const std::size_t colon = text.find(':', at);
  std::size_t length = 0;
  if (colon == std::string_view::npos || !whole(text.substr(at, colon - at), length) || length > text.size() - colon - 1)
    throw std::invalid_argument(fmt::format("settings text: no field at byte {}", at));
  at = colon + 1 + length;
  return std::string(text.substr(colon + 1, length));
}

}  // namespace

std::vector<Setting> flag_settings(const CLI::App& app) {
  std::vector<Setting> settings;
  for (const CLI::Option* option : app.get_options()) {
    const std::string& name = option->get_name();
    if (option == app.get_help_ptr() || listed(kOwnFlags, name)) continue;
    std::string value = option_value(*option);
    if (listed(kGivenOnlyFlags, name)) value = value.empty() ? "" : "DIR";
    settings.push_back({SettingKind::flag, name, std::move(value)});
  }
  return settings;
}

std::vector<Setting> environment_settings() {
  std::vector<Setting> settings;
  for (const char* name : kSharedVariables) {
    const char* value = std::getenv(name);
    settings.push_back({SettingKind::environment, name, value ? value : ""});
  }
  return settings;
}

std::vector<Setting> data_settings(const TrainConfig& config) {
#ifdef GRADSYNC_SIMULATED
  constexpr bool kWithChecksum = false;
#else
  constexpr bool kWithChecksum = true;
#endif
  std::vector<Setting> settings;
  for (auto& [file, identity] : idx_files_identity(data_dir(config), kWithChecksum))
    settings.push_back({SettingKind::data, std::move(file), std::move(identity)});
  return settings;
}

std::string settings_text(const std::vector<Setting>& settings) {
  std::string text;
  for (const Setting& s : settings)
    text += fmt::format("{}{}:{}{}:{}", static_cast<char>(s.kind), s.name.size(), s.name, s.value.size(), s.value);
  return text;
}

std::vector<Setting> settings_from_text(std::string_view text) {
  std::vector<Setting> settings;
  for (std::size_t at = 0; at < text.size();) {
    const auto kind = static_cast<SettingKind>(text[at++]);
    if (kind != SettingKind::flag && kind != SettingKind::environment && kind != SettingKind::data)
      throw std::invalid_argument(fmt::format("settings text: unknown kind at byte {}", at - 1));
    std::string name = take_field(text, at);
    settings.push_back({kind, std::move(name), take_field(text, at)});
  }
  return settings;
}

std::string describe_difference(const std::vector<Setting>& lead, const std::vector<Setting>& theirs, int rank) {
  const auto find = [](const std::vector<Setting>& in, const Setting& s) {
    return std::find_if(in.begin(), in.end(), [&](const Setting& t) { return t.kind == s.kind && t.name == s.name; });
  };
  std::vector<std::string> differences;
  for (const Setting& ours : lead) {
    const auto other = find(theirs, ours);
    if (other == theirs.end())
      differences.push_back(
          fmt::format("rank 0's {} (rank {} has no such setting: another build?)", setting_text(ours), rank));
    else if (other->value != ours.value)
      differences.push_back(fmt::format("{} (rank 0: {})", setting_text(*other), value_text(ours, ours.value)));
  }
  for (const Setting& other : theirs)
    if (find(lead, other) == lead.end())
      differences.push_back(fmt::format("{} (rank 0 has no such setting: another build?)", setting_text(other)));
  if (differences.empty() && lead != theirs) differences.push_back("the same settings in another order");
  if (differences.empty()) return {};
  const std::string more = differences.size() > 1 ? fmt::format(" (and {} more)", differences.size() - 1) : std::string();
  return fmt::format("rank {}'s settings differ from rank 0's: {}{}", rank, differences.front(), more);
}

}  // namespace gradsync
