#include "model/sgd.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "cpu/isa_dispatch.hpp"

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
  float* const v = velocity_.empty() ? nullptr : velocity_.data() + offset;
  // Compiled for the process's instruction set (cpu/isa_dispatch.hpp).
  on_active_isa([p = params.data(), g = grads.data(), n = params.size(), v, lr, wd, mu, grad_scale]()
                    GRADSYNC_INLINE_LOOP {
                      float* __restrict pr = p;
                      const float* __restrict gr = g;
                      if (!v) {
                        if (wd == 0.0f) {
                          const float step = lr * grad_scale;
                          for (std::size_t i = 0; i < n; ++i) pr[i] -= step * gr[i];
                        } else {
                          for (std::size_t i = 0; i < n; ++i) pr[i] -= lr * (grad_scale * gr[i] + wd * pr[i]);
                        }
                        return;
                      }
                      float* __restrict vr = v;
                      for (std::size_t i = 0; i < n; ++i) {
                        vr[i] = mu * vr[i] + grad_scale * gr[i] + wd * pr[i];
                        pr[i] -= lr * vr[i];
                      }
                    });
}

}  // namespace gradsync
