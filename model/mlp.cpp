#include "model/mlp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/layer_ops.hpp"
#include "model/rng.hpp"
#include "trace/scope.hpp"

namespace gradsync {

// Activations, the backward pass's deltas and evaluation's batches, for batches of up to max_batch examples.
struct Mlp::Scratch final : Workspace::Scratch {
  Scratch(const std::vector<std::size_t>& model_sizes, std::size_t max_batch)
      : sizes(model_sizes), eval_batch(std::min(max_batch, kEvaluationBatch), sizes.front()),
        eval_indices(std::min(max_batch, kEvaluationBatch)) {
    std::size_t widest = 0;
    for (std::size_t l = 1; l < sizes.size(); ++l) {
      activations.emplace_back(max_batch * sizes[l]);
      widest = std::max(widest, sizes[l]);
    }
    delta_a.resize(max_batch * widest);
    delta_b.resize(max_batch * widest);
    for (std::size_t l = 1; l < sizes.size(); ++l) layer_deltas.emplace_back(max_batch * sizes[l]);
    example_sq_norms.resize(max_batch);
    layer_sq_norms.resize(max_batch);
    input_sq_norms.resize(max_batch);
    example_scales.resize(max_batch);
  }
  std::vector<std::size_t> sizes;               // of the model it was made for
  std::vector<std::vector<float>> activations;  // [l] = sizes[l+1] x batch, post-activation (probabilities last)
  std::vector<float> delta_a, delta_b;          // ping-pong buffers for dLoss/dZ, widest layer x batch
  // Per-example clipping's (clipped_loss_and_gradient): every layer's deltas at once, [l] = sizes[l+1] x batch, since
  // each example's norm needs all of them before any weight gradient is formed; per-example sums and scales.
  std::vector<std::vector<float>> layer_deltas;
  std::vector<double> example_sq_norms, layer_sq_norms, input_sq_norms;
  std::vector<float> example_scales;
  Batch eval_batch;  // evaluation gathers its own batches
  std::vector<std::uint32_t> eval_indices;
};

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

// dW = delta A_in^T. The input layer reads the batch's row-major copy, which is A_in^T already. The layer's gradient is
// reported from its end: the biases, then dW's rows from the last block up.
void Mlp::layer_gradient(std::size_t l, const float* delta, const Batch& batch, const InputPath& path, Scratch& s,
                         std::span<float> grads, PassObserver* observer) const {
  const std::size_t n = batch.size, in = sizes_[l], out = sizes_[l + 1];
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
    layer_gradient(l, delta, batch, path, s, grads, observer);
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

// The backward pass of loss_and_gradient without the parameters' gradients, carried one layer further down:
// dLoss/dX = delta_0^T W_0, written batch-major (n x in) like the rows it differentiates.
float Mlp::input_gradient(std::span<const float> params, const Batch& batch, std::span<float> grad_x, Workspace& ws,
                          std::span<std::uint8_t> correct) const {
  const std::size_t n = batch.size, in0 = sizes_.front(), classes = sizes_.back();
  if (n == 0 || n > ws.max_batch() || params.size() != parameter_count() || batch.features != in0 ||
      grad_x.size() != n * in0 || !batch.has_rows || (!correct.empty() && correct.size() != n))
    throw std::invalid_argument(fmt::format(
        "Mlp::input_gradient: a batch of {} (workspace 1..{}, float rows: {}), {} params, {} features, {} input "
        "gradients and {} flags for a {} model ({} parameters)",
        n, ws.max_batch(), batch.has_rows, params.size(), batch.features, grad_x.size(), correct.size(), describe(),
        parameter_count()));
  Scratch& s = scratch_of(ws, "Mlp::input_gradient");
  float* delta = s.delta_a.data();
  float* next_delta = s.delta_b.data();
  const double loss = forward(params, batch, s, false, nullptr, delta);
  const float* probs = s.activations.back().data();
  for (std::size_t j = 0; j < correct.size(); ++j) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < classes; ++c)
      if (probs[c * n + j] > probs[best * n + j]) best = c;
    correct[j] = best == batch.labels[j];
  }
  for (std::size_t l = sizes_.size() - 1; l-- > 1;) {
    const std::size_t in = sizes_[l], out = sizes_[l + 1];
    gemm_observed(nullptr, false, Op::T, Op::N, in, n, out, 1.0f, params.data() + weight_offset(l), in, delta, n, 0.0f,
                  next_delta, n);
    relu_backward(s.activations[l - 1].data(), next_delta, in * n);
    std::swap(delta, next_delta);
  }
  gemm_observed(nullptr, false, Op::T, Op::N, n, in0, sizes_[1], 1.0f, delta, n, params.data() + weight_offset(0), in0,
                0.0f, grad_x.data(), in0);
  return static_cast<float>(loss / static_cast<double>(n));
}

// The per-example clipping pass (model/model.hpp, clipped_loss_and_gradient): for a dense layer example n's weight
// gradient is delta_n a_n^T and its bias gradient delta_n, so its squared norm is ||delta_n||^2 (||a_n||^2 + 1), and
// the clipped sum is the ordinary product with each example's deltas scaled by min(1, C / ||g_n||) (Goodfellow 2015,
// "Efficient per-example gradient computations"; Opacus' ghost clipping). An example's norm needs every layer's
// deltas, so the deltas of all layers are kept (the plain pass ping-pongs two buffers) and the weight gradients are
// formed in a second pass; the deltas are not recomputed.
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
    layer_gradient(l, s.layer_deltas[l].data(), batch, path, s, grads, observer);
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
