#include "trainers/compression/compressed_sync.hpp"

#include <stdexcept>

#include "trainers/compression/compressors.hpp"
#include "trainers/compression/error_feedback.hpp"

namespace gradsync {
namespace {

class CompressedSync final : public Synchronizer {
 public:
  CompressedSync(std::unique_ptr<Compressor> compressor, std::size_t count, bool error_feedback, Sgd& sgd, int workers)
      : feedback_(std::move(compressor), count, error_feedback), sgd_(sgd),
        inv_workers_(1.0f / static_cast<float>(workers)) {}
  void step(std::span<float> params, std::span<float> grads) override {
    feedback_.step(grads);
    sgd_.step(params, grads, inv_workers_);
  }

 private:
  ErrorFeedback feedback_;
  Sgd& sgd_;
  float inv_workers_;
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
  const std::size_t count = tensors.back().offset + tensors.back().size();
  return std::make_unique<CompressedSync>(choice.compressor->make(setup), count, choice.error_feedback, s.sgd,
                                          s.workers.size());
}

}  // namespace gradsync
