#include "trainers/loop/private_gradient.hpp"

namespace gradsync {

PrivateGradient::PrivateGradient(const PrivacyOptions& o, std::uint64_t seed, int rank, int workers, std::size_t batch)
    : clip_(static_cast<float>(o.dp_clip)),
      noise_std_(noise_share_std(o.dp_noise, o.dp_clip, workers, static_cast<double>(batch))), noise_(seed, rank),
      norms_(batch) {}

float PrivateGradient::compute(const Model& model, std::span<const float> params, const Batch& batch,
                               std::span<float> grads, Workspace& ws) {
  const float loss = model.clipped_loss_and_gradient(params, batch, grads, ws, clip_,
                                                     std::span<float>(norms_).first(batch.size), nullptr);
  // Adds nothing, and draws nothing, without noise: the run is then plain clipped SGD, bit for bit.
  if (noise_std_ > 0) noise_.add(grads, noise_std_);
  return loss;
}

}  // namespace gradsync
