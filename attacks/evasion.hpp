#pragma once
// Attacks at test time: FGSM (Goodfellow et al. 2015) and PGD (Madry et al. 2018) perturb test images within an
// L-infinity ball of radius eps around them, moving along the sign of the loss's gradient with respect to the
// input (Model::input_gradient), and stay in the valid pixel range [0, 1] (the dataset's pixels are byte / 255,
// model/dataset.hpp). `--eval-attack fgsm:EPS` or `pgd:EPS,STEPS` names one.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"

namespace gradsync {

struct EvasionSpec {
  enum class Kind : std::uint8_t { fgsm, pgd } kind = Kind::fgsm;
  float eps = 0;
  int steps = 1;  // pgd's
  std::string text;
};
// Parses "fgsm:EPS" or "pgd:EPS,STEPS" (0 < EPS <= 1, STEPS >= 1); std::invalid_argument naming the text otherwise.
EvasionSpec parse_evasion(std::string_view text);

// Scratch for the attacks on batches of up to `max_batch` examples of `model`'s inputs (allocated once).
struct EvasionScratch {
  EvasionScratch(const Model& model, std::size_t max_batch);
  std::vector<float> grad, clean;
};

// FGSM in place on batch.rows (float rows, as Model::input_gradient needs):
// x <- clip(x + eps * sign(dLoss/dx), 0, 1), with the sign of 0 taken as 0.
void fgsm(const Model& model, std::span<const float> params, Batch& batch, float eps, Workspace& ws,
          EvasionScratch& scratch);
// PGD in place: from x0 = x (no random start), `steps` steps of x <- proj(x + alpha * sign(dLoss/dx)), proj the
// clip to [x0 - eps, x0 + eps] and [0, 1], with Madry et al.'s step alpha = 2.5 eps / steps.
void pgd(const Model& model, std::span<const float> params, Batch& batch, float eps, int steps, Workspace& ws,
         EvasionScratch& scratch);

// The model's loss and accuracy on `data` with every example attacked by `spec` first, in batches of at most
// ws.max_batch(). Local. `params` has model.parameter_count() elements.
Evaluation evaluate_under_attack(const Model& model, std::span<const float> params, const Dataset& data,
                                 const EvasionSpec& spec, Workspace& ws);

}  // namespace gradsync
