#pragma once
// Byzantine workers and the defences against them (issue 55): how many workers are malicious and what they do, the
// robust aggregator the gradients are combined by, and the attack the final model is evaluated under. Filled by
// train's flags (trainers/cli/robust_flags.hpp) or directly by tests; checked by validate_robustness.
#include <optional>
#include <string>

#include "attacks/attack_spec.hpp"
#include "attacks/evasion.hpp"
#include "collectives/robust/aggregator_spec.hpp"

namespace gradsync {

struct TrainConfig;

struct RobustnessOptions {
  // The last `byzantine` workers (worker indices W - F .. W - 1) run `attack`; every other worker is honest.
  int byzantine = 0;
  std::optional<AttackSpec> attack;
  // mean (the default, or given as --robust-aggregation mean): today's allreduce path, bit for bit.
  AggregatorSpec aggregation;
  std::optional<EvasionSpec> eval_attack;  // after training: the final model's accuracy under this attack

  bool robust() const { return aggregation.kind != AggregatorKind::mean; }
  bool malicious(int index, int workers) const { return index >= workers - byzantine; }
};

// The checks that need no rank count: --attack and --byzantine only together. Empty, or a message naming the flag.
std::string check_attack_pairing(const RobustnessOptions& r);
// Every check of config.robust for a run on `ranks` processes (validate() calls it): the pairing, the family and
// overlap options it works with, F against the workers, the aggregator's own rule on n (resolved_for). Empty, or a
// one-line message naming the flag and the numbers.
std::string validate_robustness(const TrainConfig& config, int ranks);

}  // namespace gradsync
