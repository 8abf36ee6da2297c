#include "model/mlp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/layer_ops.hpp"
#include "model/mlp_scratch.hpp"
#include "model/rng.hpp"
#include "trace/scope.hpp"

namespace gradsync {

std::unique_ptr<Workspace::Scratch> Mlp::make_scratch(std::size_t max_batch) const {
  return std::make_unique<Scratch>(sizes_, max_batch);
}

Mlp::Scratch& Mlp::scratch_of(Workspace& ws, const char* who) const {
  Scratch* s = ws.scratch<Scratch>();
  if (!s || s->sizes != sizes_)
    throw std::invalid_argument(fmt::format("{}: the workspace was made for another model than {}", who, describe()));
  return *s;
}

Mlp::Mlp(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2)
    throw std::invalid_argument(
        fmt::format("Mlp: sizes [{}] need at least an input and an output", fmt::join(sizes_, ", ")));
  std::vector<LayerShape> layers;
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    if (sizes_[l] == 0 || sizes_[l + 1] == 0)
      throw std::invalid_argument(fmt::format("Mlp: sizes {} must all be positive", fmt::join(sizes_, "-")));
    layers.push_back({offset, sizes_[l + 1], sizes_[l]});
    offset = layers.back().end();
  }
  set_layers(std::move(layers));
}

std::string Mlp::describe() const { return fmt::format("{}", fmt::join(sizes_, "-")); }

void Mlp::init(std::span<float> params, std::uint64_t seed) const {
  if (params.size() != parameter_count())
    throw std::invalid_argument(
        fmt::format("Mlp::init: {} params for a {} model ({} parameters)", params.size(), describe(), parameter_count()));
  Rng rng(seed, 1);
  const std::size_t layers = sizes_.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const bool output_layer = l + 1 == layers;
    const float bound = std::sqrt(6.0f / static_cast<float>(output_layer ? in + out : in));
    float* w = params.data() + weight_offset(l);
    for (std::size_t i = 0; i < in * out; ++i) w[i] = bound * (2 * rng.uniform() - 1);
    std::fill_n(params.data() + bias_offset(l), out, 0.0f);
  }
}

double Mlp::forward(std::span<const float> params, const Batch& batch, Scratch& s, bool input_on_bytes,
                    PassObserver* observer, float* delta) const {
  const std::size_t layers = sizes_.size() - 1, n = batch.size;
  const float* input = batch.rows.data();  // the batch's rows are A^T: n x in
  for (std::size_t l = 0; l < layers; ++l) {
    const TraceScope traced(SpanKind::forward, "forward", static_cast<int>(l));
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    float* z = s.activations[l].data();
    const float* b = params.data() + bias_offset(l);
    for (std::size_t o = 0; o < out; ++o) std::fill_n(z + o * n, n, b[o]);  // bias, then Z += W A
    const float* w = params.data() + weight_offset(l);
    if (l == 0 && input_on_bytes)
      forward_from_bytes(out, n, in, w, batch.row_bytes.data(), kPixelScale, z, n);
    else if (l == 0)
      gemm_observed(observer, true, Op::N, Op::T, out, n, in, 1.0f, w, in, input, in, 1.0f, z, n);
    else
      gemm_observed(observer, false, Op::N, Op::N, out, n, in, 1.0f, w, in, input, n, 1.0f, z, n);
    if (l + 1 < layers) relu_inplace(z, out * n);
    if (observer) observer->between_kernels();
    input = z;
  }
  return softmax_columns(s.activations.back().data(), sizes_.back(), n, batch.labels.data(), delta,
                         1.0f / static_cast<float>(n));
}

float Mlp::loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                             PassObserver* observer) const {
  check_pass("Mlp::loss_and_gradient", params, batch, grads, ws);
  Scratch& s = scratch_of(ws, "Mlp::loss_and_gradient");
  const std::size_t n = batch.size;
  const InputPath path = input_path(n);
  if (!batch.has_rows && path.reads_rows())
    throw std::invalid_argument(fmt::format(
        "Mlp::loss_and_gradient: a batch of {} gathered without float rows, which this kernel plan reads", n));
  // The forward pass's softmax leaves dLoss/dZ of the output layer, (p - onehot(y)) / n (classes x n), in delta.
  float* delta = s.delta_a.data();
  float* next_delta = s.delta_b.data();
  const double loss = forward(params, batch, s, path.forward_on_bytes, observer, delta);
  const std::size_t layers = sizes_.size() - 1;

  for (std::size_t l = layers; l-- > 0;) {
    const TraceScope traced(SpanKind::backward, "backward", static_cast<int>(l));
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    // dW = delta A_in^T. The input layer reads the batch's row-major copy, which is A_in^T already.
    // The layer's gradient is reported from its end: the biases, then dW's rows from the last block up.
    bias_gradient(delta, out, n, grads.data() + bias_offset(l));
    if (observer) observer->gradient_ready(bias_offset(l), bias_offset(l) + out);
    float* dw = grads.data() + weight_offset(l);
    if (l == 0 && path.gradient_on_bytes) {
      weight_gradient_from_bytes(out, n, in, delta, n, batch.row_bytes.data(), kPixelScale, dw, batch.next_rows());
      if (observer) observer->gradient_ready(weight_offset(l), bias_offset(l));
    } else if (l == 0) {
      weight_gradient_observed(observer, true, Op::N, out, in, n, delta, batch.rows.data(), in, dw, weight_offset(l));
    } else {
      weight_gradient_observed(observer, false, Op::T, out, in, n, delta, s.activations[l - 1].data(), n, dw,
                               weight_offset(l));
    }
    if (l == 0) break;  // no gradient w.r.t. the input images
    // delta_in = (W^T delta) * relu'(Z_in); relu'(z) > 0 exactly where the stored activation is > 0.
    const float* a_in = s.activations[l - 1].data();
    gemm_observed(observer, false, Op::T, Op::N, in, n, out, 1.0f, params.data() + weight_offset(l), in, delta, n, 0.0f,
                  next_delta, n);
    relu_backward(a_in, next_delta, in * n);
    if (observer) observer->between_kernels();
    std::swap(delta, next_delta);
  }
  return static_cast<float>(loss / static_cast<double>(n));
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const {
  check_evaluation("Mlp::evaluate", params, data);
  Scratch& s = scratch_of(ws, "Mlp::evaluate");
  const std::size_t batch_max = s.eval_batch.max_size();
  const std::size_t classes = sizes_.back();
  double loss = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.rows; start += batch_max) {
    const std::size_t n = std::min(batch_max, data.rows - start);
    for (std::size_t j = 0; j < n; ++j) s.eval_indices[j] = static_cast<std::uint32_t>(start + j);
    const bool on_bytes = input_path(n).forward_on_bytes;
    gather_batch(data, {s.eval_indices.data(), n}, s.eval_batch, !on_bytes);
    loss += forward(params, s.eval_batch, s, on_bytes);
    const float* probs = s.activations.back().data();
    for (std::size_t j = 0; j < n; ++j) {
      std::size_t best = 0;
      for (std::size_t c = 1; c < classes; ++c)
        if (probs[c * n + j] > probs[best * n + j]) best = c;
      correct += best == data.labels[start + j];
    }
  }
  const auto rows = static_cast<double>(std::max<std::size_t>(data.rows, 1));
  return {loss / rows, static_cast<double>(correct) / rows};
}

std::vector<GemmShape> Mlp::training_gemms(std::size_t batch) const {
  std::vector<GemmShape> gemms;
  const std::size_t layers = sizes_.size() - 1;
  for (std::size_t l = 0; l < layers; ++l)
    gemms.push_back({false, l == 0, sizes_[l + 1], batch, sizes_[l], l == 0});  // Z = W A
  for (std::size_t l = layers; l-- > 0;) {
    gemms.push_back({false, l > 0, sizes_[l + 1], sizes_[l], batch, l == 0});    // dW = delta A^T
    if (l > 0) gemms.push_back({true, false, sizes_[l], batch, sizes_[l + 1]});  // W^T delta
  }
  return gemms;
}

std::vector<GemmShape> Mlp::evaluation_gemms(std::size_t batch) const {
  std::vector<GemmShape> gemms;
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l)
    gemms.push_back({false, l == 0, sizes_[l + 1], batch, sizes_[l], l == 0});
  return gemms;
}

// The input layer's products as training_gemms lists them (first and last), built here without allocating.
Mlp::InputPath Mlp::input_path(std::size_t batch) const {
  return {planned_on_bytes({false, true, sizes_[1], batch, sizes_[0], true}),
          planned_on_bytes({false, false, sizes_[1], sizes_[0], batch, true})};
}

bool Mlp::reads_float_rows(std::size_t batch) const { return input_path(batch).reads_rows(); }

}  // namespace gradsync
