#include "trainers/config/sync_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "collectives/methods.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {
namespace {

constexpr std::string_view kCompress = "compress=";

// `text` cut at every '+'.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t from = 0;;) {
    const std::size_t plus = text.find('+', from);
    out.push_back(text.substr(from, plus == std::string_view::npos ? std::string_view::npos : plus - from));
    if (plus == std::string_view::npos) return out;
    from = plus + 1;
  }
}

// The base word: one of `bounds`, or a --sync value. Empty, or why not.
std::string take_base(std::string_view word, std::span<const std::string_view> bounds, SyncSpec& s) {
  if (const auto b = std::find(bounds.begin(), bounds.end(), word); b != bounds.end()) {
    s.bound = *b;
    return {};
  }
  if (const std::optional<SyncMethod> m = find_sync_method(word)) {
    s.sync = *m;
    return {};
  }
  std::string known = fmt::format("{}, {}", sync_family_names(), allreduce_method_names(trains));
  for (std::string_view b : bounds) known += fmt::format(", {}", b);
  return fmt::format("'{}' is not a method ({})", word, known);
}

// One modifier word; `seen` holds the words taken so far. Empty, or why not.
std::string take_modifier(std::string_view word, std::vector<std::string_view>& seen, SyncSpec& s) {
  const std::string_view key = word.starts_with(kCompress) ? kCompress : word;
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) return fmt::format("+{} given twice", key);
  seen.push_back(key);
  if (key == kCompress) {
    std::string problem;
    const std::optional<CompressionChoice> choice = parse_compression(word.substr(kCompress.size()), problem);
    if (!choice) return fmt::format("+{}: {}", word, problem);
    const bool feedback = s.compression.error_feedback;  // +noef may come first
    s.compression = *choice;
    s.compression.error_feedback = feedback;
  } else if (word == "buckets") {
    s.buckets = true;
  } else if (word == "pipe") {
    s.pipeline = true;
  } else if (word == "thread") {
    s.progress = Progress::thread;
  } else if (word == "noef") {
    s.compression.error_feedback = false;
  } else if (word == "traced") {
    s.traced = true;
  } else {
    return fmt::format("'+{}' is not a modifier ({})", word, sync_spec_grammar());
  }
  return {};
}

// What the modifiers mean together. Empty, or why they do not fit.
std::string check_combination(const SyncSpec& s) {
  if (!s.compression.error_feedback && !s.compression.enabled()) return "+noef needs +compress=NAME";
  if (s.progress == Progress::thread && !s.buckets && !s.pipeline) return "+thread needs +buckets or +pipe";
  if (!s.bound.empty() && (s.buckets || s.pipeline || s.compression.enabled()))
    return fmt::format("{} takes +traced only", s.bound);
  return {};
}

}  // namespace

TrainConfig SyncSpec::applied_to(const TrainConfig& base) const {
  TrainConfig c = base;
  c.sync = sync;
  c.compression = compression;
  c.buckets = buckets;
  c.pipeline = pipeline;
  c.progress = progress;
  return c;
}

std::string SyncSpec::name(const TrainConfig& base) const {
  const std::string name = bound.empty() ? applied_to(base).sync_name() : std::string(bound);
  return traced ? name + "-traced" : name;
}

std::optional<SyncSpec> parse_sync_spec(std::string_view text, std::string& problem,
                                        std::span<const std::string_view> bounds) {
  const std::vector<std::string_view> parts = words(text);
  SyncSpec s;
  problem = take_base(parts.front(), bounds, s);
  std::vector<std::string_view> seen;
  for (std::size_t i = 1; i < parts.size() && problem.empty(); ++i) problem = take_modifier(parts[i], seen, s);
  if (problem.empty()) problem = check_combination(s);
  if (problem.empty()) return s;
  problem = fmt::format("'{}': {}", text, problem);
  return std::nullopt;
}

std::string sync_spec_grammar() {
  return fmt::format("METHOD[+buckets][+pipe][+thread][+compress=NAME[:PARAM]][+noef][+traced], NAME one of {}",
                     compressor_names());
}

}  // namespace gradsync
