#include "attacks/attack_spec.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gradsync {
namespace {

struct AttackEntry {
  AttackKind kind;
  std::string_view name;
  std::string_view parameters;
  AttackTarget target;
  bool colluding;
  std::string_view summary;
};

constexpr std::array kAttacks = {
#define GRADSYNC_ATTACK(id, name, parameters, target, colluding, summary) \
  AttackEntry{AttackKind::id, name, parameters, AttackTarget::target, colluding, summary},
#include "attacks/attacks.def"
#undef GRADSYNC_ATTACK
};

const AttackEntry& attack_entry(AttackKind kind) { return kAttacks[static_cast<std::size_t>(kind)]; }

[[noreturn]] void refuse_attack(std::string_view text, std::string_view why) {
  throw std::invalid_argument(fmt::format("attack '{}': {}", text, why));
}

double attack_number(std::string_view text, std::string_view part, std::string_view what, bool positive) {
  double value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (ec != std::errc() || end != part.data() + part.size() || !std::isfinite(value) || value < 0 ||
      (positive && value == 0))
    refuse_attack(text, fmt::format("{} must be a number {} 0, not '{}'", what, positive ? ">" : ">=", part));
  return value;
}

}  // namespace

AttackTarget attack_target(AttackKind kind) { return attack_entry(kind).target; }
bool attack_colludes(AttackKind kind) { return attack_entry(kind).colluding; }
std::string_view attack_name(AttackKind kind) { return attack_entry(kind).name; }

std::string attack_names() {
  std::string out;
  for (const AttackEntry& e : kAttacks) {
    if (!out.empty()) out += ", ";
    out += e.name;
    if (!e.parameters.empty()) fmt::format_to(std::back_inserter(out), ":{}", e.parameters);
  }
  return out;
}

std::string attack_listing() {
  std::string lines;
  for (const AttackEntry& e : kAttacks) {
    const std::string spelled = e.parameters.empty() ? std::string(e.name) : fmt::format("{}:{}", e.name, e.parameters);
    lines += fmt::format("{}\t{}\t{}\t{}\n", spelled, e.target == AttackTarget::data ? "data" : "gradient",
                         e.colluding ? "colluding" : "alone", e.summary);
  }
  return lines;
}

AttackSpec parse_attack(std::string_view text) {
  AttackSpec spec;
  spec.text = std::string(text);
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const AttackEntry* found = nullptr;
  for (const AttackEntry& e : kAttacks)
    if (e.name == name) found = &e;
  if (!found) refuse_attack(text, fmt::format("unknown attack '{}'; the attacks are {}", name, attack_names()));
  spec.kind = found->kind;
  std::vector<std::string_view> params;
  for (std::size_t at = colon == std::string_view::npos ? text.size() + 1 : colon + 1; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    params.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  const std::size_t allowed = spec.kind == AttackKind::label_flip ? 0 : spec.kind == AttackKind::backdoor ? 2 : 1;
  if (params.size() > allowed)
    refuse_attack(text, allowed == 0 ? std::string("takes no parameter")
                                     : fmt::format("takes at most {} parameter{} ({})", allowed, allowed == 1 ? "" : "s",
                                                   found->parameters));
  switch (spec.kind) {
    case AttackKind::label_flip: break;
    case AttackKind::backdoor:
      spec.scale = params.empty() ? 0.5 : attack_number(text, params[0], "SHARE", true);
      if (spec.scale > 1) refuse_attack(text, fmt::format("SHARE must be at most 1, not {}", spec.scale));
      if (params.size() == 2) {
        int c = -1;
        const auto [end, ec] = std::from_chars(params[1].data(), params[1].data() + params[1].size(), c);
        if (ec != std::errc() || end != params[1].data() + params[1].size() || c < 0 || c > 9)
          refuse_attack(text, fmt::format("TARGET must be a class 0 .. 9, not '{}'", params[1]));
        spec.target_class = c;
      }
      break;
    case AttackKind::sign_flip: spec.scale = params.empty() ? 1.0 : attack_number(text, params[0], "S", true); break;
    case AttackKind::gaussian: spec.scale = params.empty() ? 1.0 : attack_number(text, params[0], "SIGMA", true); break;
    case AttackKind::alie: spec.scale = params.empty() ? 0.0 : attack_number(text, params[0], "Z", false); break;
    case AttackKind::ipm: spec.scale = params.empty() ? 0.1 : attack_number(text, params[0], "EPS", true); break;
  }
  return spec;
}

}  // namespace gradsync
