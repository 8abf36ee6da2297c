#pragma once
// A fully connected network with ReLU hidden layers and a softmax cross-entropy output. With no hidden layers
// it is softmax regression. Parameters and gradients each live in one caller-owned contiguous buffer of
// parameter_count() floats; a layer is a view (W then b) into it, so a whole-model sync is one span.
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

namespace gradsync {

// Largest batch evaluate() gathers at once: big enough for efficient GEMMs, small enough to stay in cache.
inline constexpr std::size_t kEvaluationBatch = 1000;

// Scratch memory for one forward/backward pass of up to `max_batch` rows; allocated once, reused every step.
class Workspace {
 public:
  Workspace() = default;
  // `sizes` must be the sizes() of the Mlp that will use this workspace (only the batch bound is checked there).
  Workspace(const std::vector<std::size_t>& sizes, std::size_t max_batch);
  std::size_t max_batch() const { return max_batch_; }

 private:
  friend class Mlp;
  std::size_t max_batch_ = 0;
  std::vector<std::vector<float>> activations_;  // [l] = sizes[l+1] x batch, post-activation (probabilities last)
  std::vector<float> delta_a_, delta_b_;         // ping-pong buffers for dLoss/dZ, widest layer x batch
  Batch eval_batch_;                             // evaluation gathers its own batches
  std::vector<std::uint32_t> eval_indices_;
};

// Lets a caller act during a training pass without model/ knowing what it does (the trainer starts and moves
// communication there). Called on the thread that runs loss_and_gradient.
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  // Elements [begin, end) of the gradient buffer are final for this pass. Reported from the end of the buffer
  // towards its start (the output layer's first), each element exactly once per pass: a layer's biases, then its
  // weights' rows a block at a time from the last (so a caller may ship part of a layer while the rest computes).
  virtual void gradient_ready(std::size_t begin, std::size_t end) = 0;
  // Between two kernels of the forward or the backward pass: a moment to move communication on.
  virtual void between_kernels() {}
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

  // One forward and backward pass over `batch` (1 <= batch.size <= ws.max_batch(), batch.features ==
  // sizes()[0], gathered by gather_batch from a Dataset that is still alive, with float rows if
  // reads_float_rows(batch.size)). `params` has parameter_count() elements; the
  // gradient of the mean cross-entropy is written into `grads` (parameter_count() elements, overwritten). Returns the
  // mean loss. Allocates nothing; throws std::invalid_argument on a size mismatch. With an `observer`, it is told as each
  // layer's gradient becomes final and at every point between kernels.
  float loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads, Workspace& ws,
                          PassObserver* observer = nullptr) const;

  // Mean loss and accuracy over the whole dataset, in batches of ws.max_batch() (at most 1000). `params` has
  // parameter_count() elements and data.features == sizes()[0].
  Evaluation evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const;

  // The GEMMs loss_and_gradient performs for one batch, in order (benchmarks time exactly these).
  // Every GEMM runs on the kernel set the installed kernel plan (model/kernels/installed_plan.hpp) names for its shape,
  // BLIS's default set if the plan does not list it.
  std::vector<GemmShape> training_gemms(std::size_t batch) const;
  // The GEMMs evaluate() performs on a full batch of `batch` examples (the forward pass).
  std::vector<GemmShape> evaluation_gemms(std::size_t batch = kEvaluationBatch) const;
  // Training's shapes at `batch` and evaluation's, each once: what a kernel plan for a run should cover.
  std::vector<GemmShape> planned_gemms(std::size_t batch) const;
  // Whether loss_and_gradient on a batch of `batch` examples reads the batch's float rows under the installed
  // kernel plan: not when both of the input layer's products run on the byte kernels, which read row_bytes
  // (gather_batch can then skip the conversion).
  bool reads_float_rows(std::size_t batch) const;
  // Where each layer's parameters (W then b) start in the flat buffer, input layer first.
  const std::vector<std::size_t>& layer_offsets() const { return offsets_; }

 private:
  // Which of the input layer's two products run on the byte kernels for a batch of `batch` (the installed plan's
  // choice for the shapes training_gemms lists), looked up once per pass.
  struct InputPath {
    bool forward_on_bytes = false, gradient_on_bytes = false;
    bool reads_rows() const { return !forward_on_bytes || !gradient_on_bytes; }
  };
  InputPath input_path(std::size_t batch) const;
  // Forward pass; leaves softmax probabilities in ws.activations_.back() and, with `delta`, the output layer's
  // dLoss/dZ there (classes x batch.size). Returns the summed loss.
  double forward(std::span<const float> params, const Batch& batch, Workspace& ws, bool input_on_bytes,
                 PassObserver* observer = nullptr, float* delta = nullptr) const;
  std::size_t weight_offset(std::size_t layer) const { return offsets_[layer]; }
  std::size_t bias_offset(std::size_t layer) const { return offsets_[layer] + sizes_[layer] * sizes_[layer + 1]; }

  std::vector<std::size_t> sizes_;
  std::vector<std::size_t> offsets_;  // start of layer l's W in the flat buffer
  std::size_t parameter_count_ = 0;
};

}  // namespace gradsync
