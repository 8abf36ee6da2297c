#include "trainers/config/sync_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "collectives/methods.hpp"
#include "trainers/core/sync_method.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {
namespace {

// Every family's: the overlap and the compressors, whose flags every family takes as well (train refuses them where
// they do not apply, whichever way they were spelled).
constexpr SpecModifier kEveryFamily[] = {{"buckets", "--buckets"},
                                         {"pipe", "--pipeline", "1"},
                                         {"thread", "--progress", "thread"},
                                         {"compress=NAME[:PARAM]", "--compress"},
                                         {"noef", "--error-feedback", "0"}};

// What names a modifier in a spec: its spelling up to and including '=' ("staleness="), or the whole word.
std::string_view key(std::string_view word) {
  const std::size_t eq = word.find('=');
  return eq == std::string_view::npos ? word : word.substr(0, eq + 1);
}

// The flag and value as --help would show them: "--staleness S", "--pipeline 1", "--async".
std::string flag_text(const SpecModifier& m) {
  const std::string_view k = key(m.spelling);
  if (k.ends_with('=')) return fmt::format("{} {}", m.flag, m.spelling.substr(k.size()));
  return m.value.empty() ? std::string(m.flag) : fmt::format("{} {}", m.flag, m.value);
}

// `family`'s modifiers, then every family's.
std::vector<std::span<const SpecModifier>> tables(const SyncFamilyInfo& family) {
  return {family.flags.spec_modifiers, std::span<const SpecModifier>(kEveryFamily)};
}

std::string modifier_list(const SyncFamilyInfo& family) {
  std::string out;
  for (std::span<const SpecModifier> table : tables(family))
    for (const SpecModifier& m : table) out += fmt::format("{}+{}", out.empty() ? "" : ", ", m.spelling);
  return out;
}

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

// The base word: one of the program's own bases, or a --sync value (then `family` is set). Empty, or why not.
std::string take_base(std::string_view word, SpecWords own, SyncSpec& s, const SyncFamilyInfo*& family) {
  if (const auto b = std::find(own.bases.begin(), own.bases.end(), word); b != own.bases.end()) {
    s.own_base = *b;
    return {};
  }
  if (const std::optional<SyncMethod> m = find_sync_method(word)) {
    family = &sync_family(m->family);
    s.flags = {"--sync", std::string(word)};
    return {};
  }
  std::string known = fmt::format("{}, {}", sync_family_names(), allreduce_method_names(trains));
  for (std::string_view b : own.bases) known += fmt::format(", {}", b);
  return fmt::format("'{}' is not a method ({})", word, known);
}

// One modifier word, of the program's own or of `family` (null with an own base). Empty, or why not.
std::string take_modifier(std::string_view word, const SyncFamilyInfo* family, SpecWords own, SyncSpec& s) {
  if (const auto o = std::find(own.modifiers.begin(), own.modifiers.end(), word); o != own.modifiers.end()) {
    if (s.has(word)) return fmt::format("+{} given twice", word);
    s.own.push_back(*o);
    return {};
  }
  if (!family) {
    std::string takes;
    for (std::string_view o : own.modifiers) takes += fmt::format(" +{}", o);
    return fmt::format("{} takes{}", s.own_base, takes.empty() ? " no modifier" : " only" + takes);
  }
  const SpecModifier* m = nullptr;
  for (std::span<const SpecModifier> table : tables(*family))
    for (const SpecModifier& candidate : table)
      if (!m && key(candidate.spelling) == key(word)) m = &candidate;
  if (!m) return fmt::format("'+{}' is not a modifier of {} ({})", word, s.flags[1], modifier_list(*family));
  for (const auto& [given, flag] : s.modifiers)
    if (flag == m->flag) return fmt::format("+{} given twice", given.substr(0, given.find('=')));
  s.flags.emplace_back(m->flag);
  if (key(m->spelling).ends_with('='))
    s.flags.emplace_back(word.substr(key(word).size()));
  else if (!m->value.empty())
    s.flags.emplace_back(m->value);
  s.modifiers.emplace_back(std::string(word), m->flag);
  return {};
}

}  // namespace

bool SyncSpec::has(std::string_view own_modifier) const {
  return std::find(own.begin(), own.end(), own_modifier) != own.end();
}

std::string SyncSpec::explain(std::string_view message) const {
  std::size_t first = std::string_view::npos;
  std::string_view modifier;
  for (const auto& [word, flag] : modifiers) {
    for (std::size_t at = message.find(flag); at != std::string_view::npos; at = message.find(flag, at + 1)) {
      const std::size_t end = at + flag.size();
      const bool whole =
          end == message.size() || !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-');
      if (!whole) continue;
      if (at < first) {
        first = at;
        modifier = word;
      }
      break;
    }
  }
  if (modifier.empty()) return fmt::format("'{}': {}", text, message);
  return fmt::format("'{}' (+{}): {}", text, modifier, message);
}

std::optional<SyncSpec> parse_sync_spec(std::string_view text, std::string& problem, SpecWords own) {
  const std::vector<std::string_view> parts = words(text);
  SyncSpec s;
  s.text = text;
  const SyncFamilyInfo* family = nullptr;
  problem = take_base(parts.front(), own, s, family);
  for (std::size_t i = 1; i < parts.size() && problem.empty(); ++i) problem = take_modifier(parts[i], family, own, s);
  if (problem.empty()) return s;
  problem = fmt::format("'{}': {}", text, problem);
  return std::nullopt;
}

std::string sync_spec_grammar() {
  std::string out = "METHOD[+MODIFIER...], each modifier one of train's flags; the methods and their own modifiers:";
  for (const SyncFamilyInfo* f : sync_family_table()) {
    out += fmt::format(" {}", f->name.empty() ? std::string_view("an allreduce method") : f->name);
    for (const SpecModifier& m : f->flags.spec_modifiers) out += fmt::format(" +{} ({})", m.spelling, flag_text(m));
    out += ";";
  }
  out += " any METHOD";
  for (const SpecModifier& m : kEveryFamily) out += fmt::format(" +{} ({})", m.spelling, flag_text(m));
  return out;
}

std::vector<std::string_view> sync_spec_flags() {
  std::vector<std::string_view> flags = {"--sync"};
  const auto add = [&flags](std::span<const SpecModifier> table) {
    for (const SpecModifier& m : table)
      if (std::find(flags.begin(), flags.end(), m.flag) == flags.end()) flags.push_back(m.flag);
  };
  for (const SyncFamilyInfo* f : sync_family_table()) add(f->flags.spec_modifiers);
  add(kEveryFamily);
  return flags;
}

}  // namespace gradsync
