#include "trainers/synchronizer.hpp"

#include <stdexcept>

#include "collectives/methods.hpp"
#include "trainers/overlapped_sync.hpp"

namespace gradsync {
namespace {

// One rank: the optimizer step is the whole synchronization.
class LocalSgd final : public Synchronizer {
 public:
  explicit LocalSgd(Sgd& sgd) : sgd_(sgd) {}
  void step(std::span<float> params, std::span<float> grads) override { sgd_.step(params, grads); }

 private:
  Sgd& sgd_;
};

// Synchronous data parallelism: sum the gradients, and every worker applies the same step with the mean.
class GradientAllreduce final : public Synchronizer {
 public:
  GradientAllreduce(std::unique_ptr<Allreduce> allreduce, Sgd& sgd)
      : allreduce_(std::move(allreduce)), sgd_(sgd), inv_workers_(1.0f / static_cast<float>(allreduce_->comm().size())) {}
  void step(std::span<float> params, std::span<float> grads) override {
    allreduce_->run(grads);
    sgd_.step(params, grads, inv_workers_);
  }

 private:
  std::unique_ptr<Allreduce> allreduce_;
  Sgd& sgd_;
  float inv_workers_;
};

// Local SGD: each worker steps on its own gradient and the parameters are averaged every `every` steps.
// With every = 1 and plain SGD this is exactly synchronous SGD (averaging commutes with the linear update).
class ModelAveraging final : public Synchronizer {
 public:
  ModelAveraging(std::unique_ptr<Allreduce> allreduce, Sgd& sgd, int every)
      : allreduce_(std::move(allreduce)), sgd_(sgd), every_(every),
        inv_workers_(1.0f / static_cast<float>(allreduce_->comm().size())) {}
  void step(std::span<float> params, std::span<float> grads) override {
    sgd_.step(params, grads);
    if (++steps_ % every_ == 0) average(params);
  }
  // A run that does not end on an averaging step still ends with one model on every worker.
  void finish(std::span<float> params) override {
    if (steps_ % every_ != 0) average(params);
  }

 private:
  void average(std::span<float> params) {
    allreduce_->run(params);
    for (float& p : params) p *= inv_workers_;
  }

  std::unique_ptr<Allreduce> allreduce_;
  Sgd& sgd_;
  int every_;
  float inv_workers_;
  long steps_ = 0;
};

}  // namespace

std::unique_ptr<Synchronizer> make_allreduce_synchronizer(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                          const std::vector<std::size_t>& layer_offsets,
                                                          std::size_t parameter_count) {
  if (config.sync == "serial") return std::make_unique<LocalSgd>(sgd);
  if (config.pipeline) return make_pipelined_allreduce(config, workers, sgd);
  if (config.buckets && (layer_offsets.empty() || parameter_count == 0))
    throw std::invalid_argument("make_allreduce_synchronizer: buckets need the model's layer offsets and size");
  if (config.buckets) return make_bucketed_allreduce(config, workers, sgd, layer_offsets, parameter_count);
  AllreduceOptions options;
  options.chunk_bytes = config.chunk_bytes;
  options.report_choices = true;  // auto says once per size what it chose
  auto allreduce = make_allreduce(config.sync, workers, options);
  if (config.average_every > 0) return std::make_unique<ModelAveraging>(std::move(allreduce), sgd, config.average_every);
  return std::make_unique<GradientAllreduce>(std::move(allreduce), sgd);
}

}  // namespace gradsync
