#include "model/cnn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/layer_ops.hpp"
#include "model/rng.hpp"
#include "trace/scope.hpp"

namespace gradsync {
namespace {

// The layers in the flat buffer, in order.
constexpr std::size_t kConv1 = 0, kConv2 = 1, kDense = 2, kOutput = 3;
constexpr std::size_t kKernel = 5;

// Largest number of images whose columns for `in` fit `cols_bytes` (at least one).
std::size_t group_cap(const ConvInput& in, std::size_t cols_bytes) {
  return std::max<std::size_t>(1, cols_bytes / (in.rows() * in.pixels() * sizeof(float)));
}

}  // namespace

// Everything a pass writes, sized for max_batch examples: one group's columns and convolution outputs (reused
// for their gradients in the backward pass), each pool's output, where its maxima were and its gradient, the dense
// layers' activations and gradients, and evaluation's batches.
struct Cnn::Scratch final : Workspace::Scratch {
  Scratch(const Cnn& model, std::size_t max_batch)
      : shape(model.shape_), eval_batch(std::min(max_batch, kEvaluationBatch), model.input_features()),
        eval_indices(std::min(max_batch, kEvaluationBatch)) {
    std::size_t cols_floats = 0, z_floats = 0;
    for (std::size_t conv : {kConv1, kConv2}) {
      const ConvInput in = model.conv_input(conv);
      const std::size_t images = std::min(group_cap(in, shape.cols_bytes), max_batch);
      const std::size_t outputs = model.layers()[conv].outputs;
      cols_floats = std::max(cols_floats, in.rows() * images * in.pixels());
      z_floats = std::max(z_floats, outputs * images * in.pixels());
      pooled[conv].resize(outputs * max_batch * in.pixels() / 4);
      d_pooled[conv].resize(pooled[conv].size());
      where[conv].resize(pooled[conv].size());
    }
    cols.resize(cols_floats);
    z.resize(z_floats);
    hidden.resize(shape.hidden * max_batch);
    delta_hidden.resize(hidden.size());
    probs.resize(shape.classes * max_batch);
    delta_out.resize(probs.size());
  }
  CnnShape shape;  // of the model it was made for
  std::vector<float> cols, z;
  std::vector<float> pooled[2], d_pooled[2];
  std::vector<std::uint8_t> where[2];
  std::vector<float> hidden, delta_hidden, probs, delta_out;
  Batch eval_batch;
  std::vector<std::uint32_t> eval_indices;
};

Cnn::Cnn(CnnShape shape) : shape_(shape) {
  const CnnShape& s = shape_;
  if (s.side == 0 || s.side % 4 != 0 || s.channels1 == 0 || s.channels2 == 0 || s.hidden == 0 || s.classes == 0 ||
      s.cols_bytes == 0)
    throw std::invalid_argument(fmt::format(
        "Cnn: images of {0}x{0} (a positive multiple of 4), {1} and {2} channels, {3} hidden, {4} classes and {5} "
        "bytes of columns must all be positive",
        s.side, s.channels1, s.channels2, s.hidden, s.classes, s.cols_bytes));
  const std::size_t pooled = (s.side / 4) * (s.side / 4);
  std::vector<LayerShape> layers = {{0, s.channels1, kKernel * kKernel}};
  const auto add = [&layers](std::size_t outputs, std::size_t inputs) {
    layers.push_back({layers.back().end(), outputs, inputs});
  };
  add(s.channels2, s.channels1 * kKernel * kKernel);
  add(s.hidden, s.channels2 * pooled);
  add(s.classes, s.hidden);
  set_layers(std::move(layers));
}

std::string Cnn::describe() const {
  return fmt::format("{0}x{0}-conv5x5x{1}-pool2-conv5x5x{2}-pool2-{3}-{4}", shape_.side, shape_.channels1,
                     shape_.channels2, shape_.hidden, shape_.classes);
}

std::unique_ptr<Workspace::Scratch> Cnn::make_scratch(std::size_t max_batch) const {
  return std::make_unique<Scratch>(*this, max_batch);
}

Cnn::Scratch& Cnn::scratch_of(Workspace& ws, const char* who) const {
  Scratch* s = ws.scratch<Scratch>();
  if (!s || s->shape != shape_)
    throw std::invalid_argument(fmt::format("{}: the workspace was made for another model than {}", who, describe()));
  return *s;
}

ConvInput Cnn::conv_input(std::size_t conv) const {
  return conv == kConv1 ? ConvInput{1, shape_.side, kKernel} : ConvInput{shape_.channels1, shape_.side / 2, kKernel};
}

// The first convolution reads the batch's rows (one channel); the first pool writes channel x image x pixel, which
// the second convolution reads; the second pool writes (channel, pixel) x image, the dense layer's features x batch.
ActivationLayout Cnn::input_layout(std::size_t conv, std::size_t batch) const {
  const std::size_t pixels = conv_input(conv).pixels();
  return {batch * pixels, pixels, 1};
}

ActivationLayout Cnn::pooled_layout(std::size_t conv, std::size_t batch) const {
  const std::size_t pooled = conv_input(conv).pixels() / 4;
  return conv == kConv1 ? input_layout(kConv2, batch) : ActivationLayout{pooled * batch, 1, batch};
}

std::size_t Cnn::images_per_gemm(std::size_t conv, std::size_t batch) const {
  if (batch == 0) return 1;
  const std::size_t cap = group_cap(conv_input(conv), shape_.cols_bytes);
  const std::size_t groups = (batch + cap - 1) / cap;
  return (batch + groups - 1) / groups;  // as even as they come: 11, 11, 10 rather than 13, 13, 6 for 32 at cap 13
}

void Cnn::init(std::span<float> params, std::uint64_t seed) const {
  if (params.size() != parameter_count())
    throw std::invalid_argument(
        fmt::format("Cnn::init: {} params for a {} model ({} parameters)", params.size(), describe(), parameter_count()));
  Rng rng(seed, 1);
  for (const LayerShape& l : layers()) {
    const bool output_layer = &l == &layers().back();
    const float bound = std::sqrt(6.0f / static_cast<float>(output_layer ? l.inputs + l.outputs : l.inputs));
    for (std::size_t i = l.offset; i < l.bias_offset(); ++i) params[i] = bound * (2 * rng.uniform() - 1);
    std::fill(params.begin() + static_cast<std::ptrdiff_t>(l.bias_offset()),
              params.begin() + static_cast<std::ptrdiff_t>(l.end()), 0.0f);
  }
}

// Per group of images: its columns, one GEMM (no bias: the pool adds it after the maximum), the pool.
void Cnn::conv_forward(std::size_t conv, std::span<const float> params, const float* input, std::size_t batch, Scratch& s,
                       PassObserver* observer) const {
  const TraceScope traced(SpanKind::forward, "forward", static_cast<int>(conv));
  const LayerShape& layer = layers()[conv];
  const ConvInput in = conv_input(conv);
  const std::size_t group = images_per_gemm(conv, batch);
  for (std::size_t first = 0; first < batch; first += group) {
    const std::size_t images = std::min(group, batch - first), width = images * in.pixels();
    im2col(input, input_layout(conv, batch), in, first, images, s.cols.data());
    gemm_observed(observer, false, Op::N, Op::N, layer.outputs, width, in.rows(), 1.0f, params.data() + layer.offset,
                  in.rows(), s.cols.data(), width, 0.0f, s.z.data(), width);
    max_pool_bias_relu(s.z.data(), layer.outputs, in.side, images, params.data() + layer.bias_offset(), first,
                       s.pooled[conv].data(), s.where[conv].data(), pooled_layout(conv, batch));
    if (observer) observer->between_kernels();
  }
}

double Cnn::forward(std::span<const float> params, const Batch& batch, Scratch& s, PassObserver* observer,
                    float* delta) const {
  const std::size_t n = batch.size;
  conv_forward(kConv1, params, batch.rows.data(), n, s, observer);
  conv_forward(kConv2, params, s.pooled[kConv1].data(), n, s, observer);
  // The dense layers as model/mlp.cpp computes them: Z = b, then Z += W A.
  const float* input = s.pooled[kConv2].data();
  for (std::size_t l : {kDense, kOutput}) {
    const TraceScope traced(SpanKind::forward, "forward", static_cast<int>(l));
    const LayerShape& layer = layers()[l];
    float* z = l == kDense ? s.hidden.data() : s.probs.data();
    for (std::size_t o = 0; o < layer.outputs; ++o) std::fill_n(z + o * n, n, params[layer.bias_offset() + o]);
    gemm_observed(observer, false, Op::N, Op::N, layer.outputs, n, layer.inputs, 1.0f, params.data() + layer.offset,
                  layer.inputs, input, n, 1.0f, z, n);
    if (l == kDense) relu_inplace(z, layer.outputs * n);
    if (observer) observer->between_kernels();
    input = z;
  }
  return softmax_columns(s.probs.data(), shape_.classes, n, batch.labels.data(), delta, 1.0f / static_cast<float>(n));
}

// The pooled output's gradient, masked by ReLU, gives the biases' gradient (each channel's rows are contiguous in
// both pooled layouts); per group, the unpooled gradient dZ gives dW += dZ cols^T and, for the second convolution,
// the gradient of its input through dcols = W^T dZ and col2im. The weights are final after the last group.
void Cnn::conv_backward(std::size_t conv, std::span<const float> params, const float* input, std::size_t batch,
                        std::span<float> grads, Scratch& s, PassObserver* observer) const {
  const TraceScope traced(SpanKind::backward, "backward", static_cast<int>(conv));
  const LayerShape& layer = layers()[conv];
  const ConvInput in = conv_input(conv);
  const std::size_t pooled = layer.outputs * batch * in.pixels() / 4;
  relu_backward(s.pooled[conv].data(), s.d_pooled[conv].data(), pooled);
  bias_gradient(s.d_pooled[conv].data(), layer.outputs, batch * in.pixels() / 4, grads.data() + layer.bias_offset());
  if (observer) observer->gradient_ready(layer.bias_offset(), layer.end());
  const std::size_t group = images_per_gemm(conv, batch);
  for (std::size_t first = 0; first < batch; first += group) {
    const std::size_t images = std::min(group, batch - first), width = images * in.pixels();
    max_unpool(s.d_pooled[conv].data(), s.where[conv].data(), pooled_layout(conv, batch), layer.outputs, in.side, images,
               first, s.z.data());
    im2col(input, input_layout(conv, batch), in, first, images, s.cols.data());
    gemm_observed(observer, false, Op::N, Op::T, layer.outputs, in.rows(), width, 1.0f, s.z.data(), width, s.cols.data(),
                  width, first == 0 ? 0.0f : 1.0f, grads.data() + layer.offset, in.rows());
    if (conv == kConv2) {
      gemm_observed(observer, false, Op::T, Op::N, in.rows(), width, layer.outputs, 1.0f, params.data() + layer.offset,
                    in.rows(), s.z.data(), width, 0.0f, s.cols.data(), width);
      col2im(s.cols.data(), in, first, images, s.d_pooled[kConv1].data(), input_layout(conv, batch));
    }
    if (observer) observer->between_kernels();
  }
  if (observer) observer->gradient_ready(layer.offset, layer.bias_offset());
}

float Cnn::loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                             PassObserver* observer) const {
  check_pass("Cnn::loss_and_gradient", params, batch, grads, ws);
  Scratch& s = scratch_of(ws, "Cnn::loss_and_gradient");
  const std::size_t n = batch.size;
  if (!batch.has_rows)
    throw std::invalid_argument(
        fmt::format("Cnn::loss_and_gradient: a batch of {} gathered without float rows, which the CNN reads", n));
  // The softmax leaves dLoss/dZ of the output layer, (p - onehot(y)) / n (classes x n), in delta_out.
  const double loss = forward(params, batch, s, observer, s.delta_out.data());
  // The dense layers as model/mlp.cpp's: biases, then dW's rows from the last block up, then the input's gradient.
  const float* delta = s.delta_out.data();
  for (std::size_t l : {kOutput, kDense}) {
    const TraceScope traced(SpanKind::backward, "backward", static_cast<int>(l));
    const LayerShape& layer = layers()[l];
    const float* input = l == kOutput ? s.hidden.data() : s.pooled[kConv2].data();
    float* delta_in = l == kOutput ? s.delta_hidden.data() : s.d_pooled[kConv2].data();
    bias_gradient(delta, layer.outputs, n, grads.data() + layer.bias_offset());
    if (observer) observer->gradient_ready(layer.bias_offset(), layer.end());
    weight_gradient_observed(observer, false, Op::T, layer.outputs, layer.inputs, n, delta, input, n,
                             grads.data() + layer.offset, layer.offset);
    gemm_observed(observer, false, Op::T, Op::N, layer.inputs, n, layer.outputs, 1.0f, params.data() + layer.offset,
                  layer.inputs, delta, n, 0.0f, delta_in, n);
    if (l == kOutput) relu_backward(s.hidden.data(), delta_in, layer.inputs * n);  // the pools' ReLU: conv_backward
    if (observer) observer->between_kernels();
    delta = delta_in;
  }
  conv_backward(kConv2, params, s.pooled[kConv1].data(), n, grads, s, observer);
  conv_backward(kConv1, params, batch.rows.data(), n, grads, s, observer);
  return static_cast<float>(loss / static_cast<double>(n));
}

Evaluation Cnn::evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const {
  check_evaluation("Cnn::evaluate", params, data);
  Scratch& s = scratch_of(ws, "Cnn::evaluate");
  const std::size_t batch_max = s.eval_batch.max_size();
  double loss = 0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < data.rows; start += batch_max) {
    const std::size_t n = std::min(batch_max, data.rows - start);
    for (std::size_t j = 0; j < n; ++j) s.eval_indices[j] = static_cast<std::uint32_t>(start + j);
    gather_batch(data, {s.eval_indices.data(), n}, s.eval_batch, true);
    loss += forward(params, s.eval_batch, s, nullptr, nullptr);
    const float* probs = s.probs.data();
    for (std::size_t j = 0; j < n; ++j) {
      std::size_t best = 0;
      for (std::size_t c = 1; c < shape_.classes; ++c)
        if (probs[c * n + j] > probs[best * n + j]) best = c;
      correct += best == data.labels[start + j];
    }
  }
  const auto rows = static_cast<double>(std::max<std::size_t>(data.rows, 1));
  return {loss / rows, static_cast<double>(correct) / rows};
}

namespace {

// The products of one pass over `batch` images, in the order Cnn makes them; the backward ones with `training`.
std::vector<GemmShape> pass_gemms(const Cnn& model, std::size_t batch, bool training) {
  std::vector<GemmShape> gemms;
  const std::vector<LayerShape>& l = model.layers();
  // Each group's width (images x pixels) of convolution `conv`, in order.
  const auto widths = [&](std::size_t conv) {
    const std::size_t side = conv == kConv1 ? model.shape().side : model.shape().side / 2;
    const std::size_t group = model.images_per_gemm(conv, batch);
    std::vector<std::size_t> w;
    for (std::size_t first = 0; first < batch; first += group) w.push_back(std::min(group, batch - first) * side * side);
    return w;
  };
  for (std::size_t conv : {kConv1, kConv2})
    for (std::size_t w : widths(conv)) gemms.push_back({false, false, l[conv].outputs, w, l[conv].inputs});
  for (std::size_t d : {kDense, kOutput}) gemms.push_back({false, false, l[d].outputs, batch, l[d].inputs});
  if (!training) return gemms;
  for (std::size_t d : {kOutput, kDense}) {
    gemms.push_back({false, true, l[d].outputs, l[d].inputs, batch});  // dW = delta A^T
    gemms.push_back({true, false, l[d].inputs, batch, l[d].outputs});  // W^T delta
  }
  for (std::size_t conv : {kConv2, kConv1})
    for (std::size_t w : widths(conv)) {
      gemms.push_back({false, true, l[conv].outputs, l[conv].inputs, w});                      // dW += dZ cols^T
      if (conv == kConv2) gemms.push_back({true, false, l[conv].inputs, w, l[conv].outputs});  // dcols = W^T dZ
    }
  return gemms;
}

}  // namespace

std::vector<GemmShape> Cnn::training_gemms(std::size_t batch) const { return pass_gemms(*this, batch, true); }

std::vector<GemmShape> Cnn::evaluation_gemms() const { return pass_gemms(*this, kEvaluationBatch, false); }

}  // namespace gradsync
