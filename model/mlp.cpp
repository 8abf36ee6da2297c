#include "model/mlp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "cpu/isa_dispatch.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/rng.hpp"
#include "model/vector_exp.hpp"
#include "model/vector_log.hpp"
#include "trace/scope.hpp"

namespace gradsync {
namespace {

// The loops outside the GEMMs run compiled for the process's instruction set (cpu/isa_dispatch.hpp): each entry
// point below dispatches once, and the helpers it calls are inlined into it.

void relu_inplace(float* z, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    for (std::size_t i = 0; i < n; ++i) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
  });
}

// delta[i] = 0 where the layer's stored activation a[i] is 0: relu'(z) > 0 exactly where relu(z) > 0.
void relu_backward(const float* a, float* delta, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const float* __restrict in = a;
    float* __restrict d = delta;
    for (std::size_t i = 0; i < n; ++i) d[i] = in[i] > 0.0f ? d[i] : 0.0f;
  });
}

// The sum of x[0..n) in kLanes interleaved partial sums: one running sum is a chain of dependent additions (the
// compiler may not reorder float sums), the partial sums are one vector addition per kLanes elements.
__attribute__((always_inline)) inline float row_sum(const float* x, std::size_t n) {
  constexpr std::size_t kLanes = 16;
  float partial[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) partial[k] += x[j + k];
  float sum = 0;
  for (float p : partial) sum += p;
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// Softmax down each column of z (classes x batch), in place, kBlock columns at a time so that a block's running
// maxima and sums stay in registers while its classes are swept (each sweep over contiguous memory). With `delta`,
// also writes the output layer's dLoss/dZ = (p - onehot(y)) * inv_n there (classes x batch; needs y). Returns
// -sum log p[y] over the columns (no loss if y is null), summed in kBlock lanes as row_sum does.
__attribute__((always_inline)) inline double softmax_loop(float* z, std::size_t classes, std::size_t batch,
                                                          const std::uint8_t* y, float* delta, float inv_n) {
  constexpr std::size_t kBlock = 16;
  float loss_lanes[kBlock] = {};
  const auto block = [&](std::size_t j0, auto width) GRADSYNC_INLINE_LOOP {
    float m[kBlock], s[kBlock];
    for (std::size_t k = 0; k < width; ++k) m[k] = z[j0 + k];
    for (std::size_t c = 1; c < classes; ++c) {
      const float* row = z + c * batch + j0;
      // Not std::max: GCC leaves its select between references to the two floats a branch, not a vector max.
      for (std::size_t k = 0; k < width; ++k) m[k] = row[k] > m[k] ? row[k] : m[k];
    }
    for (std::size_t k = 0; k < width; ++k) s[k] = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) {
      float* row = z + c * batch + j0;
      for (std::size_t k = 0; k < width; ++k) s[k] += row[k] = exp_nonpositive(row[k] - m[k]);
    }
    for (std::size_t k = 0; k < width; ++k) s[k] = 1.0f / s[k];
    for (std::size_t c = 0; c < classes; ++c) {
      float* row = z + c * batch + j0;
      for (std::size_t k = 0; k < width; ++k) row[k] *= s[k];
      if (delta)
        for (std::size_t k = 0; k < width; ++k) delta[c * batch + j0 + k] = row[k] * inv_n;
    }
    if (!y) return;
    float label_p[kBlock];
    for (std::size_t k = 0; k < width; ++k) {
      const std::size_t at = y[j0 + k] * batch + j0 + k;
      label_p[k] = std::max(z[at], 1e-30f);
      if (delta) delta[at] -= inv_n;
    }
    for (std::size_t k = 0; k < width; ++k) loss_lanes[k] -= log_positive(label_p[k]);
  };
  std::size_t j0 = 0;
  for (; j0 + kBlock <= batch; j0 += kBlock) block(j0, std::integral_constant<std::size_t, kBlock>{});
  if (j0 < batch) block(j0, batch - j0);
  double loss = 0;
  for (float lane : loss_lanes) loss += lane;
  return loss;
}

double softmax_columns(float* z, std::size_t classes, std::size_t batch, const std::uint8_t* y, float* delta,
                       float inv_n) {
  return on_active_isa([=]() GRADSYNC_INLINE_LOOP { return softmax_loop(z, classes, batch, y, delta, inv_n); });
}

// db[o] = the sum of delta's row o (outputs x n).
void bias_gradient(const float* delta, std::size_t outputs, std::size_t n, float* db) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    for (std::size_t o = 0; o < outputs; ++o) db[o] = row_sum(delta + o * n, n);
  });
}

// A BLIS GEMM on the kernels the installed plan names for its shape (batch_operand as in GemmShape), cut into row
// blocks (gemm_in_row_blocks) with the observer told between blocks.
void gemm_observed(PassObserver* observer, bool batch_operand, Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k,
                   float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                   std::size_t ldc) {
  cntx_t* cntx = planned_context(GemmShape{ta == Op::T, tb == Op::T, m, n, k, batch_operand});
  gemm_in_row_blocks(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cntx, [observer] {
    if (observer) observer->between_kernels();
  });
}

// dW (out x in, at `dw_offset` in the gradient buffer) = delta (out x n) . op(B), as gemm_observed would compute it,
// with each row block reported ready as it becomes final (the last block first) and a progress point after every
// block but the last: a bucket of dW's rows ships while the rows above it compute.
void weight_gradient_observed(PassObserver* observer, bool batch_operand, Op tb, std::size_t out, std::size_t in,
                              std::size_t n, const float* delta, const float* b, std::size_t ldb, float* dw,
                              std::size_t dw_offset) {
  cntx_t* cntx = planned_context(GemmShape{false, tb == Op::T, out, in, n, batch_operand});
  gemm_in_row_blocks_from_end(Op::N, tb, out, in, n, 1.0f, delta, n, b, ldb, 0.0f, dw, in, cntx,
                              [=](std::size_t first, std::size_t rows) {
                                if (!observer) return;
                                observer->gradient_ready(dw_offset + first * in, dw_offset + (first + rows) * in);
                                if (first > 0) observer->between_kernels();
                              });
}

}  // namespace

Workspace::Workspace(const std::vector<std::size_t>& sizes, std::size_t max_batch)
    : max_batch_(max_batch), eval_batch_(std::min(max_batch, kEvaluationBatch), sizes.front()),
      eval_indices_(std::min(max_batch, kEvaluationBatch)) {
  std::size_t widest = 0;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    activations_.emplace_back(max_batch * sizes[l]);
    widest = std::max(widest, sizes[l]);
  }
  delta_a_.resize(max_batch * widest);
  delta_b_.resize(max_batch * widest);
}

Mlp::Mlp(std::vector<std::size_t> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2)
    throw std::invalid_argument(
        fmt::format("Mlp: sizes [{}] need at least an input and an output", fmt::join(sizes_, ", ")));
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    if (sizes_[l] == 0 || sizes_[l + 1] == 0)
      throw std::invalid_argument(fmt::format("Mlp: sizes {} must all be positive", fmt::join(sizes_, "-")));
    offsets_.push_back(parameter_count_);
    parameter_count_ += sizes_[l] * sizes_[l + 1] + sizes_[l + 1];
  }
}

std::string Mlp::describe() const { return fmt::format("{}", fmt::join(sizes_, "-")); }

void Mlp::init(std::span<float> params, std::uint64_t seed) const {
  if (params.size() != parameter_count_)
    throw std::invalid_argument(
        fmt::format("Mlp::init: {} params for a {} model ({} parameters)", params.size(), describe(), parameter_count_));
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

double Mlp::forward(std::span<const float> params, const Batch& batch, Workspace& ws, bool input_on_bytes,
                    PassObserver* observer, float* delta) const {
  const std::size_t layers = sizes_.size() - 1, n = batch.size;
  const float* input = batch.rows.data();  // the batch's rows are A^T: n x in
  for (std::size_t l = 0; l < layers; ++l) {
    const TraceScope traced(SpanKind::forward, "forward", static_cast<int>(l));
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    float* z = ws.activations_[l].data();
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
  return softmax_columns(ws.activations_.back().data(), sizes_.back(), n, batch.labels.data(), delta,
                         1.0f / static_cast<float>(n));
}

float Mlp::loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                             PassObserver* observer) const {
  const std::size_t n = batch.size;
  if (n == 0 || n > ws.max_batch_)
    throw std::invalid_argument(
        fmt::format("Mlp::loss_and_gradient: batch of {} rows, the workspace holds 1..{}", n, ws.max_batch_));
  if (params.size() != parameter_count_ || grads.size() != parameter_count_ || batch.features != sizes_.front())
    throw std::invalid_argument(
        fmt::format("Mlp::loss_and_gradient: {} params, {} grads and {} features for a {} model ({} parameters)",
                    params.size(), grads.size(), batch.features, describe(), parameter_count_));
  const InputPath path = input_path(n);
  if (!batch.has_rows && path.reads_rows())
    throw std::invalid_argument(fmt::format(
        "Mlp::loss_and_gradient: a batch of {} gathered without float rows, which this kernel plan reads", n));
  // The forward pass's softmax leaves dLoss/dZ of the output layer, (p - onehot(y)) / n (classes x n), in delta.
  float* delta = ws.delta_a_.data();
  float* next_delta = ws.delta_b_.data();
  const double loss = forward(params, batch, ws, path.forward_on_bytes, observer, delta);
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
      weight_gradient_observed(observer, false, Op::T, out, in, n, delta, ws.activations_[l - 1].data(), n, dw,
                               weight_offset(l));
    }
    if (l == 0) break;  // no gradient w.r.t. the input images
    // delta_in = (W^T delta) * relu'(Z_in); relu'(z) > 0 exactly where the stored activation is > 0.
    const float* a_in = ws.activations_[l - 1].data();
    gemm_observed(observer, false, Op::T, Op::N, in, n, out, 1.0f, params.data() + weight_offset(l), in, delta, n, 0.0f,
                  next_delta, n);
    relu_backward(a_in, next_delta, in * n);
    if (observer) observer->between_kernels();
    std::swap(delta, next_delta);
  }
  return static_cast<float>(loss / static_cast<double>(n));
}

Evaluation Mlp::evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const {
  if (params.size() != parameter_count_ || data.features != sizes_.front())
    throw std::invalid_argument(fmt::format("Mlp::evaluate: {} params and {} features for a {} model ({} parameters)",
                                            params.size(), data.features, describe(), parameter_count_));
  const std::size_t batch_max = ws.eval_batch_.max_size();
  const std::size_t classes = sizes_.back();
  double loss = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.rows; start += batch_max) {
    const std::size_t n = std::min(batch_max, data.rows - start);
    for (std::size_t j = 0; j < n; ++j) ws.eval_indices_[j] = static_cast<std::uint32_t>(start + j);
    const bool on_bytes = input_path(n).forward_on_bytes;
    gather_batch(data, {ws.eval_indices_.data(), n}, ws.eval_batch_, !on_bytes);
    loss += forward(params, ws.eval_batch_, ws, on_bytes);
    const float* probs = ws.activations_.back().data();
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

std::vector<GemmShape> Mlp::planned_gemms(std::size_t batch) const {
  std::vector<GemmShape> gemms = training_gemms(batch);
  for (const GemmShape& g : evaluation_gemms())
    if (std::find(gemms.begin(), gemms.end(), g) == gemms.end()) gemms.push_back(g);
  return gemms;
}

// The input layer's products as training_gemms lists them (first and last), built here without allocating.
Mlp::InputPath Mlp::input_path(std::size_t batch) const {
  return {planned_on_bytes({false, true, sizes_[1], batch, sizes_[0], true}),
          planned_on_bytes({false, false, sizes_[1], sizes_[0], batch, true})};
}

bool Mlp::reads_float_rows(std::size_t batch) const { return input_path(batch).reads_rows(); }

}  // namespace gradsync
