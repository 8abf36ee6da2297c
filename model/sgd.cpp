#include "model/sgd.hpp"

#include <stdexcept>

namespace gradsync {

Sgd::Sgd(SgdOptions options, std::size_t parameter_count)
    : options_(options), velocity_(options.momentum != 0.0f ? parameter_count : 0, 0.0f) {}

void Sgd::step(std::span<float> params, std::span<const float> grads, float grad_scale) {
  step_range(params, grads, 0, grad_scale);
}

void Sgd::step_range(std::span<float> params, std::span<const float> grads, std::size_t offset, float grad_scale,
                     float decay_scale) {
  if (params.size() != grads.size()) throw std::invalid_argument("Sgd::step: params and grads differ in size");
  const float lr = options_.lr, wd = options_.weight_decay * decay_scale, mu = options_.momentum;
  float* __restrict p = params.data();
  const float* __restrict g = grads.data();
  const std::size_t n = params.size();
  if (velocity_.empty()) {
    if (wd == 0.0f) {
      const float step = lr * grad_scale;
      for (std::size_t i = 0; i < n; ++i) p[i] -= step * g[i];
    } else {
      for (std::size_t i = 0; i < n; ++i) p[i] -= lr * (grad_scale * g[i] + wd * p[i]);
    }
    return;
  }
  if (offset + n > velocity_.size()) throw std::invalid_argument("Sgd::step_range: range outside the model");
  float* __restrict v = velocity_.data() + offset;
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] + grad_scale * g[i] + wd * p[i];
    p[i] -= lr * v[i];
  }
}

}  // namespace gradsync
