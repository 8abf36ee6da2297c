#pragma once
// Which attack a malicious participant runs, parsed from its text ("sign-flip:4", "backdoor:0.3,7", "alie"). The
// list is attacks.def.
#include <cstdint>
#include <string>
#include <string_view>

namespace gradsync {

enum class AttackKind : std::uint8_t {
#define GRADSYNC_ATTACK(id, name, parameters, target, colluding, summary) id,
#include "attacks/attacks.def"
#undef GRADSYNC_ATTACK
};

enum class AttackTarget : std::uint8_t { data, gradient };

struct AttackSpec {
  AttackKind kind = AttackKind::sign_flip;
  // The attack's number: sign-flip's S, gaussian's SIGMA, ipm's EPS, backdoor's SHARE; alie's Z (0: from n and f).
  double scale = 0;
  int target_class = 0;  // backdoor's TARGET
  std::string text;
};

// Parses `text`: a name of attacks.def, then ':' and its parameters (each optional, with the defaults attacks.def
// states). Throws std::invalid_argument naming the text and what is wrong (an unknown name with the list; a
// parameter that is not a number, out of range, or extra). Local.
AttackSpec parse_attack(std::string_view text);
AttackTarget attack_target(AttackKind kind);
// Whether the malicious participants pool their honest gradients for it (alie, ipm).
bool attack_colludes(AttackKind kind);
std::string_view attack_name(AttackKind kind);
// "label-flip, backdoor:[SHARE[,TARGET]], ..." in the order of attacks.def.
std::string attack_names();
// One line per attack of attacks.def, in its order, for `train --list-attacks`: the name as spelled (with its
// parameters), a tab, what it poisons (data or gradient), a tab, whether its participants collude (colluding or
// alone), a tab, what it does.
std::string attack_listing();

}  // namespace gradsync
