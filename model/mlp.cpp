#include "model/mlp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/gemm.hpp"
#include "model/rng.hpp"

namespace gradsync {
namespace {

constexpr std::size_t kEvalBatch = 1000;

void relu_inplace(float* z, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
}

// Row-wise softmax in place; returns -sum log p[y] over the rows (y may be null: no loss).
double softmax_rows(float* z, std::size_t rows, std::size_t cols, const std::uint8_t* y) {
  double loss = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = z + r * cols;
    const float m = *std::max_element(row, row + cols);
    float sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += row[c] = std::exp(row[c] - m);
    const float inv = 1.0f / sum;
    for (std::size_t c = 0; c < cols; ++c) row[c] *= inv;
    if (y) loss -= std::log(std::max(row[y[r]], 1e-30f));
  }
  return loss;
}

}  // namespace

Workspace::Workspace(const std::vector<std::size_t>& sizes, std::size_t max_batch) : max_batch_(max_batch) {
  std::size_t widest = 0;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    activations_.emplace_back(max_batch * sizes[l]);
    widest = std::max(widest, sizes[l]);
  }
  delta_a_.resize(max_batch * widest);
  delta_b_.resize(max_batch * widest);
}

Mlp::Mlp(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("Mlp needs at least an input and an output size");
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    if (sizes_[l] == 0 || sizes_[l + 1] == 0) throw std::invalid_argument("Mlp layer sizes must be positive");
    offsets_.push_back(parameter_count_);
    parameter_count_ += sizes_[l] * sizes_[l + 1] + sizes_[l + 1];
  }
}

std::string Mlp::describe() const { return fmt::format("{}", fmt::join(sizes_, "-")); }

void Mlp::init(std::span<float> params, std::uint64_t seed) const {
  if (params.size() != parameter_count_) throw std::invalid_argument("Mlp::init: wrong parameter buffer size");
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

double Mlp::forward(std::span<const float> params, const float* x, const std::uint8_t* y, std::size_t batch,
                    Workspace& ws) const {
  const std::size_t layers = sizes_.size() - 1;
  const float* input = x;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    float* z = ws.activations_[l].data();
    const float* b = params.data() + bias_offset(l);
    for (std::size_t r = 0; r < batch; ++r) std::copy_n(b, out, z + r * out);  // bias, then Z += A W
    gemm(Op::N, Op::N, batch, out, in, 1.0f, input, in, params.data() + weight_offset(l), out, 1.0f, z, out);
    if (l + 1 < layers) relu_inplace(z, batch * out);
    input = z;
  }
  return softmax_rows(ws.activations_.back().data(), batch, sizes_.back(), y);
}

float Mlp::loss_and_gradient(std::span<const float> params, const float* x, const std::uint8_t* y, std::size_t batch,
                             std::span<float> grads, Workspace& ws) const {
  if (batch == 0 || batch > ws.max_batch_) throw std::invalid_argument("Mlp::loss_and_gradient: batch exceeds workspace");
  const double loss = forward(params, x, y, batch, ws);
  const std::size_t layers = sizes_.size() - 1;
  const std::size_t classes = sizes_.back();

  // dLoss/dZ of the output layer: (p - onehot(y)) / batch.
  float* delta = ws.delta_a_.data();
  float* next_delta = ws.delta_b_.data();
  const float inv_batch = 1.0f / static_cast<float>(batch);
  const float* probs = ws.activations_.back().data();
  for (std::size_t i = 0; i < batch * classes; ++i) delta[i] = probs[i] * inv_batch;
  for (std::size_t r = 0; r < batch; ++r) delta[r * classes + y[r]] -= inv_batch;

  for (std::size_t l = layers; l-- > 0;) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const float* a_in = l == 0 ? x : ws.activations_[l - 1].data();
    // dW = A_in^T delta, db = column sums of delta.
    gemm(Op::T, Op::N, in, out, batch, 1.0f, a_in, in, delta, out, 0.0f, grads.data() + weight_offset(l), out);
    float* db = grads.data() + bias_offset(l);
    std::fill_n(db, out, 0.0f);
    for (std::size_t r = 0; r < batch; ++r)
      for (std::size_t c = 0; c < out; ++c) db[c] += delta[r * out + c];
    if (l == 0) break;  // no gradient w.r.t. the input images
    // delta_in = (delta W^T) * relu'(Z_in); relu'(z) > 0 exactly where the stored activation is > 0.
    gemm(Op::N, Op::T, batch, in, out, 1.0f, delta, out, params.data() + weight_offset(l), out, 0.0f, next_delta, in);
    for (std::size_t i = 0; i < batch * in; ++i) next_delta[i] = a_in[i] > 0.0f ? next_delta[i] : 0.0f;
    std::swap(delta, next_delta);
  }
  return static_cast<float>(loss / static_cast<double>(batch));
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const {
  const std::size_t batch_max = std::min(ws.max_batch_, kEvalBatch);
  const std::size_t classes = sizes_.back();
  double loss = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.rows; start += batch_max) {
    const std::size_t batch = std::min(batch_max, data.rows - start);
    loss += forward(params, data.row(start), &data.labels[start], batch, ws);
    const float* probs = ws.activations_.back().data();
    for (std::size_t r = 0; r < batch; ++r) {
      const float* row = probs + r * classes;
      correct += static_cast<std::size_t>(std::max_element(row, row + classes) - row) == data.labels[start + r];
    }
  }
  const auto n = static_cast<double>(std::max<std::size_t>(data.rows, 1));
  return {loss / n, static_cast<double>(correct) / n};
}

double Mlp::eval_flops_per_example() const {
  double f = 0;
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) f += 2.0 * static_cast<double>(sizes_[l] * sizes_[l + 1]);
  return f;
}

double Mlp::train_flops_per_example() const {
  // forward, plus dW for every layer, plus delta propagation for every layer but the first.
  const double forward_flops = eval_flops_per_example();
  const double input_layer = 2.0 * static_cast<double>(sizes_[0] * sizes_[1]);
  return forward_flops + forward_flops + (forward_flops - input_layer);
}

}  // namespace gradsync
