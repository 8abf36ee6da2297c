#include "trainers/report/robustness_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "attacks/data_poisoning.hpp"
#include "attacks/evasion.hpp"

namespace gradsync {

std::string describe_robustness(const TrainConfig& config, int ranks) {
  const RobustnessOptions& r = config.robust;
  if (r.byzantine == 0 && !r.robust()) return {};
  const int workers = config.worker_count(ranks), first = ranks - r.byzantine;  // no servers: validate_robustness
  std::string who = fmt::format("byzantine: none of the {} workers attack", workers);
  if (r.byzantine == 1)
    who = fmt::format("byzantine: the last 1 of {} workers (rank {}) runs {}", workers, first, r.attack->text);
  else if (r.byzantine > 1)
    who = fmt::format("byzantine: the last {} of {} workers (ranks {}..{}) run {}", r.byzantine, workers, first,
                      ranks - 1, r.attack->text);
  return fmt::format("{}; gradients aggregated by {}", who,
                     r.robust() ? r.aggregation.text : std::string("mean (the allreduce's sum / workers)"));
}

std::string check_eval_attack(const TrainConfig& config, const Model& model) {
  if (!config.robust.eval_attack) return {};
  Workspace ws(model, 1);
  Batch batch(1, model.input_features());
  batch.size = 1;
  batch.has_rows = true;
  std::vector<float> params(model.parameter_count()), grad(model.input_features());
  try {
    (void)model.input_gradient(params, batch, grad, ws);
  } catch (const std::invalid_argument& e) {
    return fmt::format("--eval-attack {}: --model {} has no input gradient ({})", config.robust.eval_attack->text,
                       config.model->name, e.what());
  }
  return {};
}

std::vector<std::string> robustness_lines(const TrainConfig& config, const Model& model, std::span<const float> params,
                                          const TrainTest& data) {
  const RobustnessOptions& r = config.robust;
  std::vector<std::string> lines;
  if (!r.eval_attack && !(r.attack && r.attack->kind == AttackKind::backdoor)) return lines;
  if (params.size() != model.parameter_count()) return lines;  // nothing trained (a resumed run past its target)
  Workspace ws(model, kEvaluationBatch);
  const Evaluation clean = model.evaluate(params, data.test, ws);
  if (r.eval_attack) {
    const Evaluation attacked = evaluate_under_attack(model, params, data.test, *r.eval_attack, ws);
    lines.push_back(fmt::format("under {}: test accuracy {:.4f} (clean {:.4f})", r.eval_attack->text, attacked.accuracy,
                                clean.accuracy));
  }
  if (r.attack && r.attack->kind == AttackKind::backdoor) {
    Trigger trigger;
    trigger.width = trigger.height =
        static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(data.test.features))));
    const std::span<const std::uint8_t> pixels(data.test.pixels.data(), data.test.rows * data.test.features);
    TriggeredSet set = triggered_test_set(pixels, data.test.labels, r.attack->target_class, trigger);
    Dataset triggered;
    triggered.rows = set.labels.size();
    triggered.features = data.test.features;
    triggered.classes = data.test.classes;
    triggered.labels = std::move(set.labels);
    triggered.pixels = ReadOnlyBytes(std::move(set.pixels));
    const Evaluation asr = model.evaluate(params, triggered, ws);
    lines.push_back(
        fmt::format("backdoor: attack success rate {:.4f} (target {} on {} triggered test images; clean "
                    "accuracy {:.4f})",
                    asr.accuracy, r.attack->target_class, triggered.rows, clean.accuracy));
  }
  return lines;
}

}  // namespace gradsync
