#include "trainers/cli/robust_flags.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {

void add_robust_options(CLI::App& app, RobustnessOptions& r, RobustFlags& raw) {
  app.add_option("--byzantine", r.byzantine,
                 "F: the last F worker ranks are malicious and run --attack (allreduce methods, blocking steps)")
      ->capture_default_str();
  app.add_option("--attack", raw.attack, fmt::format("what the --byzantine workers do: {}", attack_names()));
  app.add_option("--robust-aggregation", raw.aggregation,
                 fmt::format("how the workers' gradients are combined: {} (F left out: --byzantine's; mean is the "
                             "allreduce's sum / workers, as without this flag)",
                             aggregator_names()))
      ->capture_default_str();
  app.add_option("--eval-attack", raw.eval_attack,
                 "fgsm:EPS | pgd:EPS,STEPS: after training, the test accuracy under that attack (mlp, softmax)");
}

void take_robust(const RobustFlags& raw, RobustnessOptions& r) {
  try {
    if (!raw.attack.empty()) r.attack = parse_attack(raw.attack);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--attack", e.what());
  }
  try {
    r.aggregation = parse_aggregator(raw.aggregation, r.byzantine);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--robust-aggregation", e.what());
  }
  try {
    if (!raw.eval_attack.empty()) r.eval_attack = parse_evasion(raw.eval_attack);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--eval-attack", e.what());
  }
  if (const std::string problem = check_attack_pairing(r); !problem.empty()) throw CLI::ValidationError(problem);
}

}  // namespace gradsync
