// Mlp's per-example clipping pass (model/model.hpp, clipped_loss_and_gradient): for a dense layer example n's weight
// gradient is delta_n a_n^T and its bias gradient delta_n, so its squared norm is ||delta_n||^2 (||a_n||^2 + 1), and
// the clipped sum is the ordinary product with each example's deltas scaled by min(1, C / ||g_n||) (Goodfellow 2015,
// "Efficient per-example gradient computations"; Opacus' ghost clipping). An example's norm needs every layer's
// deltas, so the deltas of all layers are kept (the plain pass ping-pongs two buffers) and the weight gradients are
// formed in a second pass; the deltas are not recomputed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/kernels/byte_gemm.hpp"
#include "model/layer_ops.hpp"
#include "model/mlp.hpp"
#include "model/mlp_scratch.hpp"
#include "trace/scope.hpp"

namespace gradsync {
namespace {

// acc[j] += the squared norm of column j of m (rows x n).
void add_column_sq_norms(const float* m, std::size_t rows, std::size_t n, double* acc) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      const double v = m[r * n + j];
      acc[j] += v * v;
    }
}

// out[j] = the squared norm of example j's input row (the batch is n x features, as floats or as bytes).
void input_sq_norms(const Batch& batch, double* out) {
  const std::size_t n = batch.size, f = batch.features;
  for (std::size_t j = 0; j < n; ++j) {
    double acc = 0;
    if (batch.has_rows) {
      const float* row = batch.rows.data() + j * f;
      for (std::size_t i = 0; i < f; ++i) acc += static_cast<double>(row[i]) * row[i];
    } else {
      const std::uint8_t* row = batch.row_bytes[j];
      for (std::size_t i = 0; i < f; ++i) {
        const double v = static_cast<double>(static_cast<float>(row[i]) * kPixelScale);
        acc += v * v;
      }
    }
    out[j] = acc;
  }
}

}  // namespace

float Mlp::clipped_loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads,
                                     Workspace& ws, float clip, std::span<float> norms, PassObserver* observer) const {
  check_pass("Mlp::clipped_loss_and_gradient", params, batch, grads, ws);
  Scratch& s = scratch_of(ws, "Mlp::clipped_loss_and_gradient");
  const std::size_t n = batch.size, layers = sizes_.size() - 1;
  if (!(clip > 0) || !std::isfinite(clip))
    throw std::invalid_argument(fmt::format("Mlp::clipped_loss_and_gradient: clip norm {} (needs > 0)", clip));
  if (!norms.empty() && norms.size() != n)
    throw std::invalid_argument(
        fmt::format("Mlp::clipped_loss_and_gradient: {} norms for a batch of {}", norms.size(), n));
  const InputPath path = input_path(n);
  if (!batch.has_rows && path.reads_rows())
    throw std::invalid_argument(fmt::format(
        "Mlp::clipped_loss_and_gradient: a batch of {} gathered without float rows, which this kernel plan reads", n));

  // Pass 1: every layer's deltas, (p - onehot(y)) / n at the output, as the plain pass computes them.
  const double loss = forward(params, batch, s, path.forward_on_bytes, observer, s.layer_deltas[layers - 1].data());
  for (std::size_t l = layers - 1; l > 0; --l) {
    const TraceScope traced(SpanKind::backward, "backward deltas", static_cast<int>(l));
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    gemm_observed(observer, false, Op::T, Op::N, in, n, out, 1.0f, params.data() + weight_offset(l), in,
                  s.layer_deltas[l].data(), n, 0.0f, s.layer_deltas[l - 1].data(), n);
    relu_backward(s.activations[l - 1].data(), s.layer_deltas[l - 1].data(), in * n);
    if (observer) observer->between_kernels();
  }

  // Each example's squared norm: sum over layers of ||delta_n||^2 (||a_n||^2 + 1), in double.
  double* total = s.example_sq_norms.data();
  std::fill_n(total, n, 0.0);
  for (std::size_t l = 0; l < layers; ++l) {
    double* d2 = s.layer_sq_norms.data();
    double* a2 = s.input_sq_norms.data();
    std::fill_n(d2, n, 0.0);
    add_column_sq_norms(s.layer_deltas[l].data(), sizes_[l + 1], n, d2);
    if (l == 0) {
      input_sq_norms(batch, a2);
    } else {
      std::fill_n(a2, n, 0.0);
      add_column_sq_norms(s.activations[l - 1].data(), sizes_[l], n, a2);
    }
    for (std::size_t j = 0; j < n; ++j) total[j] += d2[j] * (a2[j] + 1);
  }
  // The deltas carry the mean's 1/n: example j's own gradient has n times their norm.
  bool any_clipped = false;
  for (std::size_t j = 0; j < n; ++j) {
    const double norm = static_cast<double>(n) * std::sqrt(total[j]);
    if (!norms.empty()) norms[j] = static_cast<float>(norm);
    const bool clipped = norm > clip;
    s.example_scales[j] = clipped ? static_cast<float>(clip / norm) : 1.0f;
    any_clipped = any_clipped || clipped;
  }
  if (any_clipped)  // else every scale is 1 and the products below are the plain pass's, bit for bit
    for (std::size_t l = 0; l < layers; ++l) {
      float* d = s.layer_deltas[l].data();
      for (std::size_t o = 0; o < sizes_[l + 1]; ++o)
        for (std::size_t j = 0; j < n; ++j) d[o * n + j] *= s.example_scales[j];
    }

  // Pass 2: the weight and bias gradients from the scaled deltas, reported as the plain pass reports them.
  for (std::size_t l = layers; l-- > 0;) {
    const TraceScope traced(SpanKind::backward, "backward", static_cast<int>(l));
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    const float* delta = s.layer_deltas[l].data();
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
  }
  return static_cast<float>(loss / static_cast<double>(n));
}

}  // namespace gradsync
