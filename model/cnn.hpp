#pragma once
// A convolutional network for one-channel square images: 5x5 convolution ('same' padding) with `channels1`
// outputs, 2x2 max pool, 5x5 convolution with `channels2`, 2x2 max pool, a fully connected layer of `hidden` with
// ReLU (ReLU also follows each convolution), and `classes` outputs with softmax cross-entropy. On 28x28 MNIST with
// the defaults (32, 64, 512, 10) it has 1,663,370 parameters: the CNN of McMahan et al.'s federated averaging paper.
//
// Parameters (model/model.hpp's flat buffer), one LayerShape per layer: a convolution's weights are out_channels x
// (in_channels * 5 * 5), a row per output channel in (in channel, ky, kx) order, then its biases; the fully
// connected layers as in model/mlp.hpp, the first one reading the second pool's output as features (channel, y, x).
//
// Computation: a convolution is im2col then one BLIS GEMM per group of images (model/conv_ops.hpp), the columns of
// a group bounded by CnnShape::cols_bytes so that they stay in cache while the GEMM packs them; activations are
// channel-major (channel x image x pixel), so the GEMM's C is a group's outputs as they stand, and the second pool
// writes the first dense layer's input as features x batch, the layout model/mlp.hpp's layers use. Every GEMM runs
// on the installed kernel plan's kernels for its shape (training_gemms lists them).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/conv_ops.hpp"
#include "model/dataset.hpp"
#include "model/kernels/gemm_shape.hpp"
#include "model/model.hpp"

namespace gradsync {

struct CnnShape {
  std::size_t side = 28;  // input images are side x side (a multiple of 4: two pools halve it)
  std::size_t channels1 = 32, channels2 = 64, hidden = 512, classes = 10;
  // Largest im2col buffer of one GEMM: a convolution's images are cut into groups whose columns fit (at least one
  // image per group). docs/compute.md ("The CNN") has the measurement behind the default.
  std::size_t cols_bytes = std::size_t{1} << 20;
  bool operator==(const CnnShape&) const = default;
};

class Cnn final : public Model {
 public:
  // All sizes positive and side a multiple of 4 (std::invalid_argument).
  explicit Cnn(CnnShape shape = {});

  const CnnShape& shape() const { return shape_; }
  std::string describe() const override;  // e.g. "28x28-conv5x5x32-pool2-conv5x5x64-pool2-512-10"
  std::size_t input_features() const override { return shape_.side * shape_.side; }

  // He-uniform weights for the ReLU layers (fan-in: in channels x 25 for a convolution), Glorot for the output
  // layer, zero biases.
  void init(std::span<float> params, std::uint64_t seed) const override;
  float loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                          PassObserver* observer = nullptr) const override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const override;

  std::vector<GemmShape> training_gemms(std::size_t batch) const override;
  std::vector<GemmShape> evaluation_gemms() const override;
  bool reads_float_rows(std::size_t) const override { return true; }  // im2col reads the float rows

  // How many images one GEMM of convolution `conv` (0 or 1) takes at a batch of `batch`: as many as cols_bytes
  // holds, at least one, at most the batch, evened out over the groups the batch needs.
  std::size_t images_per_gemm(std::size_t conv, std::size_t batch) const;

 private:
  struct Scratch;
  std::unique_ptr<Workspace::Scratch> make_scratch(std::size_t max_batch) const override;
  Scratch& scratch_of(Workspace& ws, const char* who) const;
  // Convolution `conv`'s input shape, and where its pooled output goes in a pass over `batch` images.
  ConvInput conv_input(std::size_t conv) const;
  ActivationLayout pooled_layout(std::size_t conv, std::size_t batch) const;
  ActivationLayout input_layout(std::size_t conv, std::size_t batch) const;
  // Forward pass; leaves the probabilities (classes x batch.size) in the scratch and, with `delta`, the output
  // layer's dLoss/dZ there. Returns the summed loss.
  double forward(std::span<const float> params, const Batch& batch, Scratch& s, PassObserver* observer,
                 float* delta) const;
  void conv_forward(std::size_t conv, std::span<const float> params, const float* input, std::size_t batch, Scratch& s,
                    PassObserver* observer) const;
  // The gradient of convolution `conv` from its pooled output's (in s, ReLU already applied), and with conv 1 the
  // gradient of its input; reports the layer's biases, then its weights.
  void conv_backward(std::size_t conv, std::span<const float> params, const float* input, std::size_t batch,
                     std::span<float> grads, Scratch& s, PassObserver* observer) const;

  CnnShape shape_;
};

}  // namespace gradsync
