#pragma once
// A fully connected network with ReLU hidden layers and a softmax cross-entropy output. With no hidden layers
// it is softmax regression. Parameters and gradients each live in one caller-owned contiguous buffer of
// parameter_count() floats; a layer is a view (W then b) into it, so a whole-model sync is one span.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/dataset.hpp"

namespace gradsync {

// Scratch memory for one forward/backward pass of up to `max_batch` rows; allocated once, reused every step.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const std::vector<std::size_t>& sizes, std::size_t max_batch);
  std::size_t max_batch() const { return max_batch_; }

 private:
  friend class Mlp;
  std::size_t max_batch_ = 0;
  std::vector<std::vector<float>> activations_;  // [l] = batch x sizes[l+1], post-activation (probabilities last)
  std::vector<float> delta_a_, delta_b_;         // ping-pong buffers for dLoss/dZ, batch x widest layer
};

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

class Mlp {
 public:
  // sizes = {inputs, hidden..., classes}; at least two entries, all positive.
  explicit Mlp(std::vector<std::size_t> sizes);

  const std::vector<std::size_t>& sizes() const { return sizes_; }
  std::size_t parameter_count() const { return parameter_count_; }
  std::string describe() const;  // e.g. "784-128-10"

  // Deterministic initialization from `seed`: He-uniform weights for ReLU layers, Glorot for the output layer,
  // zero biases. `params` has parameter_count() elements.
  void init(std::span<float> params, std::uint64_t seed) const;

  // One forward and backward pass over `batch` rows of `x` (batch x inputs, contiguous) with labels `y`.
  // Writes the gradient of the mean cross-entropy into `grads` (parameter_count() elements, overwritten) and
  // returns the mean loss. Requires batch <= ws.max_batch(); allocates nothing.
  float loss_and_gradient(std::span<const float> params, const float* x, const std::uint8_t* y, std::size_t batch,
                          std::span<float> grads, Workspace& ws) const;

  // Mean loss and accuracy over the whole dataset, in batches of ws.max_batch().
  Evaluation evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const;

  // Floating-point operations the code performs per example (GEMMs only; elementwise work is O(params/batch)).
  double train_flops_per_example() const;
  double eval_flops_per_example() const;

 private:
  // Forward pass; leaves softmax probabilities in ws.activations_.back(). Returns the summed loss.
  double forward(std::span<const float> params, const float* x, const std::uint8_t* y, std::size_t batch,
                 Workspace& ws) const;
  std::size_t weight_offset(std::size_t layer) const { return offsets_[layer]; }
  std::size_t bias_offset(std::size_t layer) const { return offsets_[layer] + sizes_[layer] * sizes_[layer + 1]; }

  std::vector<std::size_t> sizes_;
  std::vector<std::size_t> offsets_;  // start of layer l's W in the flat buffer
  std::size_t parameter_count_ = 0;
};

}  // namespace gradsync
