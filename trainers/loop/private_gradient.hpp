#pragma once
// DP-SGD's gradient on one worker (Abadi et al. 2016): the mean of its examples' gradients each clipped to norm C
// (the model's per-example clipping pass), plus this worker's share of the Gaussian noise, so that the mean the
// synchronizer takes over the p workers is (sum of B clipped gradients + N(0, (sigma C)^2)) / B for the global batch
// B = p b, and no un-noised gradient leaves the worker. Planned once per worker; a step allocates nothing.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.hpp"
#include "privacy/gaussian_noise.hpp"
#include "trainers/config/privacy_options.hpp"

namespace gradsync {

class PrivateGradient {
 public:
  // For `workers` workers of per-worker batch `batch`, with o.dp() set. The noise is seeded from the run's `seed` and
  // this worker's world `rank`: reproducible and independent across ranks, not cryptographic (an adversary who knows
  // the seed can subtract the noise: privacy/gaussian_noise.hpp).
  PrivateGradient(const PrivacyOptions& o, std::uint64_t seed, int rank, int workers, std::size_t batch);

  // As Model::clipped_loss_and_gradient into `grads`, then the noise share added; returns the mean loss. No observer:
  // nothing of the gradient may leave before its noise is in. Throws the model's std::invalid_argument for a model
  // without the per-example pass (the CNN).
  float compute(const Model& model, std::span<const float> params, const Batch& batch, std::span<float> grads,
                Workspace& ws);
  double noise_std() const { return noise_std_; }

 private:
  float clip_;
  double noise_std_;
  GaussianNoise noise_;
  std::vector<float> norms_;  // the last batch's per-example gradient norms before clipping
};

}  // namespace gradsync
