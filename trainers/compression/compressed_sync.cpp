#include "trainers/compression/compressed_sync.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "model/checkpoint.hpp"
#include "trainers/compression/compressors.hpp"
#include "trainers/compression/error_feedback.hpp"

namespace gradsync {
namespace {

std::size_t count_of(const std::vector<Tensor>& tensors) { return tensors.back().offset + tensors.back().size(); }

std::size_t compressor_state_size(const CompressionChoice& c, const std::vector<Tensor>& tensors) {
  return c.compressor->state_size ? c.compressor->state_size(c.param, tensors) : 0;
}

// Its state for checkpoints: the compressor's (the same on every worker), then with error feedback every worker's
// residual in worker order, gathered when saved.
class CompressedSync final : public Synchronizer {
 public:
  CompressedSync(std::unique_ptr<Compressor> compressor, std::size_t count, bool error_feedback, Sgd& sgd,
                 const Comm& workers)
      : feedback_(std::move(compressor), count, error_feedback), sgd_(sgd), workers_(workers),
        inv_workers_(1.0f / static_cast<float>(workers.size())), own_size_(feedback_.compressor().state().size()),
        count_(count) {}
  void step(std::span<float> params, std::span<float> grads) override {
    feedback_.step(grads);
    sgd_.step(params, grads, inv_workers_);
  }
  std::size_t state_size() const override { return saved_size(workers_.size()); }
  void save_state(std::span<float> out) override {
    const std::span<const float> own = feedback_.compressor().state();
    std::copy(own.begin(), own.end(), out.begin());
    if (!feedback_.on()) return;
    const std::vector<float> all = workers_.all_gather(feedback_.residual());
    std::copy(all.begin(), all.end(), out.begin() + static_cast<std::ptrdiff_t>(own.size()));
  }
  // Workers keep their index's residual; those at an index the saved run did not have start from zero, and the
  // saved residuals of indices this run does not have are dropped (error_feedback.hpp says why).
  void load_state(std::span<const float> saved, int saved_workers, int index) override {
    if (saved.size() != saved_size(saved_workers))
      throw CheckpointError(
          fmt::format("checkpoint: its compression state holds {} values, but this compressor on "
                      "the checkpoint's {} workers keeps {}",
                      saved.size(), saved_workers, saved_size(saved_workers)));
    const std::span<float> own = feedback_.compressor().state();
    std::copy_n(saved.begin(), own.size(), own.begin());
    const std::span<float> residual = feedback_.residual();
    std::fill(residual.begin(), residual.end(), 0.0f);
    if (feedback_.on() && index < saved_workers)
      std::copy_n(saved.begin() + static_cast<std::ptrdiff_t>(own.size() + residual.size() * index), residual.size(),
                  residual.begin());
  }

 private:
  std::size_t saved_size(int workers) const {
    return own_size_ + (feedback_.on() ? count_ * static_cast<std::size_t>(workers) : 0);
  }

  ErrorFeedback feedback_;
  Sgd& sgd_;
  Comm workers_;
  float inv_workers_;
  std::size_t own_size_, count_;  // the compressor's state, and the model's parameters
};

}  // namespace

std::unique_ptr<Synchronizer> make_compressed_sync(const TrainConfig& config, const SyncSetup& s) {
  if (s.layer_sizes.empty()) throw std::invalid_argument("make_compressed_sync: needs the model's layer sizes");
  const std::vector<Tensor> tensors = model_tensors({s.layer_sizes.begin(), s.layer_sizes.end()});
  const CompressionChoice& choice = config.compression;
  if (const std::string problem = choice.compressor->check_model(choice.param, tensors); !problem.empty())
    throw std::invalid_argument("--compress " + problem);
  const CompressorSetup setup{s.workers, config.sync.allreduce, allreduce_options(config),
                              tensors,   choice.param,          config.seed};
  return std::make_unique<CompressedSync>(choice.compressor->make(setup), count_of(tensors), choice.error_feedback, s.sgd,
                                          s.workers);
}

std::size_t compressed_state_size(const TrainConfig& config, const std::vector<std::size_t>& layer_sizes, int workers) {
  const CompressionChoice& c = config.compression;
  if (!c.enabled()) return 0;
  const std::vector<Tensor> tensors = model_tensors(layer_sizes);
  return compressor_state_size(c, tensors) +
         (c.error_feedback ? count_of(tensors) * static_cast<std::size_t>(workers) : 0);
}

}  // namespace gradsync
