#pragma once
// What the trainer needs of a model: its parameters' layout, one forward and backward pass, an evaluation, and the
// GEMMs it runs (for the kernel plan). Trainers hold a Model and never name a concrete one; model/models.hpp lists
// the models and builds them. Parameters and gradients each live in one caller-owned contiguous buffer of
// parameter_count() floats, tiled by the layers (LayerShape), so a whole-model sync is one span.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/dataset.hpp"
#include "model/kernels/gemm_shape.hpp"
#include "model/layer_shape.hpp"

namespace gradsync {

// Largest batch evaluate() gathers at once: big enough for efficient GEMMs, small enough to stay in cache.
inline constexpr std::size_t kEvaluationBatch = 1000;

class Model;

// Scratch memory for one forward/backward pass of up to `max_batch` examples of one model; allocated once, reused
// every step (a pass allocates nothing). What it holds is the model's business.
class Workspace {
 public:
  Workspace() = default;
  // Scratch for `model`, for batches of 1..max_batch examples. Use it with that model or one of the same shape: a
  // pass refuses a workspace made for another shape, or one too small for its batch.
  Workspace(const Model& model, std::size_t max_batch);
  std::size_t max_batch() const { return max_batch_; }

  // What a model keeps in it (a model's own derived type).
  class Scratch {
   public:
    virtual ~Scratch() = default;
  };
  // The scratch as the type `T` a model made it, or null if another kind of model made it (or none did).
  template <class T>
  T* scratch() const {
    return dynamic_cast<T*>(scratch_.get());
  }

 private:
  std::size_t max_batch_ = 0;
  std::unique_ptr<Scratch> scratch_;
};

// Lets a caller act during a training pass without model/ knowing what it does (the trainer starts and moves
// communication there). Called on the thread that runs loss_and_gradient.
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  // Elements [begin, end) of the gradient buffer are final for this pass. Reported from the end of the buffer
  // towards its start (the output layer's first), each element exactly once per pass: a layer's biases, then its
  // weights, whole or a block of rows at a time from the last (so a caller may ship part of a layer while the rest
  // computes).
  virtual void gradient_ready(std::size_t begin, std::size_t end) = 0;
  // Between two kernels of the forward or the backward pass: a moment to move communication on.
  virtual void between_kernels() {}
};

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  // The model's shape in one line (e.g. "784-128-10"): what a checkpoint must match to be resumed.
  virtual std::string describe() const = 0;
  // Features of an example (pixels of an image, row-major): batches and datasets must have this many.
  virtual std::size_t input_features() const = 0;
  // The layers in buffer order (input layer first); they tile [0, parameter_count()).
  const std::vector<LayerShape>& layers() const { return layers_; }
  std::size_t parameter_count() const { return layers_.empty() ? 0 : layers_.back().end(); }

  // Deterministic initialization from `seed`. `params` has parameter_count() elements (std::invalid_argument).
  virtual void init(std::span<float> params, std::uint64_t seed) const = 0;

  // One forward and backward pass over `batch` (1 <= batch.size <= ws.max_batch(), batch.features ==
  // input_features(), gathered by gather_batch from a Dataset that is still alive, with float rows if
  // reads_float_rows(batch.size)), with `ws` made for this model. `params` has parameter_count() elements; the
  // gradient of the mean cross-entropy is written into `grads` (parameter_count() elements, overwritten). Returns
  // the mean loss. Allocates nothing; throws std::invalid_argument on a size mismatch or a workspace of another
  // model. With an `observer`, it is told as each part of the gradient becomes final (PassObserver's order) and at
  // points between kernels.
  virtual float loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads,
                                  Workspace& ws, PassObserver* observer = nullptr) const = 0;

  // DP-SGD's pass (Abadi et al. 2016), called as loss_and_gradient and checked as it is: `grads` receives
  // (1/n) sum_n min(1, clip / ||g_n||) g_n, where g_n is example n's gradient of its own loss (the plain pass gives
  // (1/n) sum_n g_n), and `norms` (batch.size elements, or empty) each ||g_n|| before clipping. clip > 0
  // (std::invalid_argument). When no example's norm passes clip, grads is bit for bit loss_and_gradient's. Models
  // of dense layers compute it without forming any g_n (Mlp); the others throw std::invalid_argument saying why.
  virtual float clipped_loss_and_gradient(std::span<const float> params, const Batch& batch, std::span<float> grads,
                                          Workspace& ws, float clip, std::span<float> norms,
                                          PassObserver* observer = nullptr) const;

  // Mean loss and accuracy over the whole dataset, in batches of at most min(ws.max_batch(), kEvaluationBatch).
  // `params` has parameter_count() elements and data.features == input_features() (std::invalid_argument).
  virtual Evaluation evaluate(std::span<const float> params, const Dataset& data, Workspace& ws) const = 0;

  // The gradient of the mean cross-entropy over `batch` with respect to its inputs (for attacks at test time), from
  // batch.rows (batch.has_rows; 1 <= batch.size <= ws.max_batch(), batch.features == input_features()) into
  // `grad_x` (batch.size x input_features(), row-major like batch.rows, overwritten); `ws` made for this model.
  // With `correct` (batch.size entries), also writes 1 where the model classifies the example right, else 0.
  // Returns the mean loss, as loss_and_gradient would. Touches neither the parameters nor a gradient buffer, and
  // runs every product on float rows (a perturbed image is not bytes). Throws std::invalid_argument on a size
  // mismatch, and for a model that has no input gradient (the default: only Mlp, softmax regression included,
  // has one so far).
  virtual float input_gradient(std::span<const float> params, const Batch& batch, std::span<float> grad_x, Workspace& ws,
                               std::span<std::uint8_t> correct = {}) const;

  // The GEMMs loss_and_gradient performs for one batch of `batch` examples, in order, each call listed (benchmarks
  // time exactly these). Every GEMM runs on the kernels the installed kernel plan (model/kernels/installed_plan.hpp)
  // names for its shape, the plan's fallback if it does not list it.
  virtual std::vector<GemmShape> training_gemms(std::size_t batch) const = 0;
  // The GEMMs evaluate() performs on a full batch of kEvaluationBatch examples.
  virtual std::vector<GemmShape> evaluation_gemms() const = 0;
  // Training's shapes at `batch` and evaluation's, each shape once: what a kernel plan for a run should cover.
  std::vector<GemmShape> planned_gemms(std::size_t batch) const;
  // Whether loss_and_gradient on a batch of `batch` examples reads the batch's float rows under the installed
  // kernel plan (gather_batch can skip the conversion when it does not).
  virtual bool reads_float_rows(std::size_t batch) const = 0;

 protected:
  // The scratch a Workspace of `max_batch` examples holds for this model.
  virtual std::unique_ptr<Workspace::Scratch> make_scratch(std::size_t max_batch) const = 0;
  // Called once by a derived constructor: `layers` must tile the buffer from 0 (std::invalid_argument otherwise).
  void set_layers(std::vector<LayerShape> layers);
  // The checks every pass makes, with messages naming `who`, the sizes given and the model's: the batch against
  // the workspace, the buffers and the features.
  void check_pass(const char* who, std::span<const float> params, const Batch& batch, std::span<const float> grads,
                  const Workspace& ws) const;
  void check_evaluation(const char* who, std::span<const float> params, const Dataset& data) const;

 private:
  friend class Workspace;
  std::vector<LayerShape> layers_;
};

}  // namespace gradsync
