#include "model/sgd.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {

Sgd::Sgd(SgdOptions options, std::size_t parameter_count)
    : options_(options), parameter_count_(parameter_count),
      velocity_(options.momentum != 0.0f ? parameter_count : 0, 0.0f) {}

void Sgd::step(std::span<float> params, std::span<const float> grads, float grad_scale) {
  if (params.size() != parameter_count_)
    throw std::invalid_argument(fmt::format("Sgd::step: {} params for a model of {}", params.size(), parameter_count_));
  step_range(params, grads, 0, grad_scale);
}

void Sgd::step_range(std::span<float> params, std::span<const float> grads, std::size_t offset, float grad_scale,
                     float decay_scale) {
  if (params.size() != grads.size())
    throw std::invalid_argument(fmt::format("Sgd::step: {} params but {} grads", params.size(), grads.size()));
  if (offset + params.size() > parameter_count_)
    throw std::invalid_argument(fmt::format("Sgd::step_range: [{}, {}) is outside the model's {} parameters", offset,
                                            offset + params.size(), parameter_count_));
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
  float* __restrict v = velocity_.data() + offset;
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] + grad_scale * g[i] + wd * p[i];
    p[i] -= lr * v[i];
  }
}

}  // namespace gradsync
