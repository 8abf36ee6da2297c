#pragma once
// A fully connected network with ReLU hidden layers and a softmax cross-entropy output. With no hidden layers
// it is softmax regression. Layer l's parameters are W (sizes[l+1] x sizes[l]) then b (sizes[l+1]) in the flat
// buffer (model/model.hpp).
// Layout: W is out x in (row-major), activations are features x batch. BLIS orients a GEMM by how C is
// stored, so this puts the small class dimension (10) on the microkernel's 6-row side instead of its 16-column
// side, which makes the softmax-regression step markedly faster than batch-major activations (docs/compute.md).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/dataset.hpp"
#include "model/kernels/gemm_shape.hpp"
#include "model/model.hpp"

namespace gradsync {

class Mlp final : public Model {
 public:
  // sizes = {inputs, hidden..., classes}; at least two entries, all positive (std::invalid_argument).
  explicit Mlp(std::vector<std::size_t> sizes);

  const std::vector<std::size_t>& sizes() const { return sizes_; }
  std::string describe() const override;  // e.g. "784-128-10"
  std::size_t input_features() const override { return sizes_.front(); }

  // He-uniform weights for ReLU layers, Glorot for the output layer, zero biases.
  void init(std::span<float> params, std::uint64_t seed) const override;
  float loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                          PassObserver* observer = nullptr) const override;
  Evaluation evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const override;
  float input_gradient(std::span<const float> params, const Batch& batch, std::span<float> grad_x, Workspace& ws,
                       std::span<std::uint8_t> correct = {}) const override;
  // Two passes over stored deltas: the backward pass keeps every layer's deltas and sums
  // each example's squared norm over layers, ||delta_n||^2 (||a_n||^2 + 1) (weights and bias), then scales each
  // example's deltas and forms the weight gradients as the plain pass does.
  float clipped_loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads,
                                  Workspace& ws, float clip, std::span<float> norms,
                                  PassObserver* observer = nullptr) const override;

  std::vector<GemmShape> training_gemms(std::size_t batch) const override;
  // Also at another batch than kEvaluationBatch (the forward pass's products).
  std::vector<GemmShape> evaluation_gemms(std::size_t batch) const;
  std::vector<GemmShape> evaluation_gemms() const override { return evaluation_gemms(kEvaluationBatch); }
  // Not when both of the input layer's products run on the byte kernels, which read row_bytes.
  bool reads_float_rows(std::size_t batch) const override;

 private:
  struct Scratch;
  std::unique_ptr<Workspace::Scratch> make_scratch(std::size_t max_batch) const override;
  // `ws`'s scratch, if made for a model of these sizes; else std::invalid_argument naming `who`.
  Scratch& scratch_of(Workspace& ws, const char* who) const;
  // Which of the input layer's two products run on the byte kernels for a batch of `batch` (the installed plan's
  // choice for the shapes training_gemms lists), looked up once per pass.
  struct InputPath {
    bool forward_on_bytes = false, gradient_on_bytes = false;
    bool reads_rows() const { return !forward_on_bytes || !gradient_on_bytes; }
  };
  InputPath input_path(std::size_t batch) const;
  // Forward pass; leaves softmax probabilities in the last activations and, with `delta`, the output layer's
  // dLoss/dZ there (classes x batch.size). Returns the summed loss.
  double forward(std::span<const float> params, const Batch& batch, Scratch& s, bool input_on_bytes,
                 PassObserver* observer = nullptr, float* delta = nullptr) const;
  // Layer `l`'s bias and weight gradients from its deltas `delta` (out x batch), into `grads`, reported to `observer`.
  void layer_gradient(std::size_t l, const float* delta, const Batch& batch, const InputPath& path, Scratch& s,
                      std::span<float> grads, PassObserver* observer) const;
  std::size_t weight_offset(std::size_t layer) const { return layers()[layer].offset; }
  std::size_t bias_offset(std::size_t layer) const { return layers()[layer].bias_offset(); }

  std::vector<std::size_t> sizes_;
};

}  // namespace gradsync
