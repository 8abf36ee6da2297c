#pragma once
// Stochastic gradient descent with optional momentum and L2 weight decay:
//   v = momentum * v + (scale * g + weight_decay * p);   p -= lr * v     (momentum = 0: no state is kept)
#include <cstddef>
#include <span>
#include <vector>

namespace gradsync {

struct SgdOptions {
  float lr = 0.1f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

class Sgd {
 public:
  Sgd(SgdOptions options, std::size_t parameter_count);

  // Applies one step. `grads` is multiplied by `grad_scale` first (e.g. 1/W for a summed gradient), so callers
  // never need a separate pass to average. params.size() == grads.size() == parameter_count.
  void step(std::span<float> params, std::span<const float> grads, float grad_scale = 1.0f);

  // Same step on the sub-range [offset, offset + params.size()) of the model: a sharded server updates its slice.
  // `decay_scale` scales the weight-decay term: an asynchronous server that applies each of W workers'
  // gradients separately passes 1/W so that a round of W updates decays the weights once, as one sync step does.
  void step_range(std::span<float> params, std::span<const float> grads, std::size_t offset, float grad_scale,
                  float decay_scale = 1.0f);

  const SgdOptions& options() const { return options_; }
  std::span<float> state() { return velocity_; }  // momentum buffer (empty without momentum), for checkpoints
  std::span<const float> state() const { return velocity_; }

 private:
  SgdOptions options_;
  std::size_t parameter_count_;
  std::vector<float> velocity_;
};

}  // namespace gradsync
