#include "trainers/overlapped_sync.hpp"

#include <algorithm>
#include <utility>

#include "collectives/methods.hpp"
#include "trainers/comm_engine.hpp"

namespace gradsync {
namespace {

// A span's allreduce as an engine job.
class AllreduceJob final : public CommJob {
 public:
  explicit AllreduceJob(std::unique_ptr<Allreduce> allreduce) : allreduce_(std::move(allreduce)) {}
  void set_data(std::span<float> data) { data_ = data; }
  void start() override { allreduce_->start(data_); }
  bool test() override { return allreduce_->test(); }
  void wait() override { allreduce_->wait(); }

 private:
  std::unique_ptr<Allreduce> allreduce_;
  std::span<float> data_;
};

// config.sync's allreduce, planned on `workers`.
std::unique_ptr<Allreduce> make_method(const TrainConfig& config, const Comm& workers) {
  return config.sync.allreduce->make(workers, allreduce_options(config));
}

// Communication time not spent waiting: in flight while the worker computed.
double hidden_part(double busy_s, double blocked_s) { return std::max(0.0, busy_s - blocked_s); }

class BucketedAllreduce final : public Synchronizer, public PassObserver {
 public:
  BucketedAllreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd, std::span<const std::size_t> layer_offsets,
                    std::size_t parameter_count)
      : sgd_(sgd), inv_workers_(1.0f / static_cast<float>(workers.size())),
        engine_(config.progress, bucket_count(config, layer_offsets, parameter_count)) {
    // From the output layer down, whole layers, closing a bucket once it holds bucket_bytes.
    std::size_t end = parameter_count;
    for (std::size_t l = layer_offsets.size(); l-- > 0;) {
      const std::size_t begin = layer_offsets[l];
      if ((end - begin) * sizeof(float) >= config.bucket_bytes || l == 0) {
        buckets_.push_back({begin, end});
        jobs_.push_back(std::make_unique<AllreduceJob>(make_method(config, workers)));
        end = begin;
      }
    }
  }

  PassObserver* observer(std::span<float> grads) override {
    grads_ = grads;
    next_ = 0;
    return this;
  }

  // Layers finish from the end of the buffer down: a bucket is complete once the finished part reaches its start.
  void gradient_ready(std::size_t begin, std::size_t) override {
    while (next_ < buckets_.size() && buckets_[next_].begin >= begin) enqueue_next();
    engine_.poll();  // start it before the next kernel
  }
  void between_kernels() override { engine_.poll(); }

  void step(std::span<float> params, std::span<float> grads) override {
    if (grads.data() != grads_.data()) observer(grads);  // a pass that was not observed: every bucket starts now
    while (next_ < buckets_.size()) enqueue_next();
    const double blocked = engine_.wait_all();
    hidden_s_ += hidden_part(engine_.take_busy_seconds(), blocked);
    sgd_.step(params, grads, inv_workers_);
    grads_ = {};
  }

  double take_hidden_seconds() override { return std::exchange(hidden_s_, 0.0); }

 private:
  static std::size_t bucket_count(const TrainConfig& config, std::span<const std::size_t> offsets, std::size_t n) {
    std::size_t count = 0, end = n;
    for (std::size_t l = offsets.size(); l-- > 0;)
      if ((end - offsets[l]) * sizeof(float) >= config.bucket_bytes || l == 0) ++count, end = offsets[l];
    return count;
  }
  void enqueue_next() {
    const ElementRange b = buckets_[next_];
    jobs_[next_]->set_data(grads_.subspan(b.begin, b.size()));
    engine_.enqueue(*jobs_[next_]);
    ++next_;
  }

  Sgd& sgd_;
  float inv_workers_;
  CommEngine engine_;
  std::vector<ElementRange> buckets_;  // output layer's first, as the backward pass finishes them
  std::vector<std::unique_ptr<AllreduceJob>> jobs_;
  std::span<float> grads_;  // the gradient the observed pass computes
  std::size_t next_ = 0;    // first bucket not queued yet
  double hidden_s_ = 0;
};

class PipelinedAllreduce final : public Synchronizer, public PassObserver {
 public:
  PipelinedAllreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd)
      : sgd_(sgd), inv_workers_(1.0f / static_cast<float>(workers.size())), engine_(config.progress, 1),
        job_(make_method(config, workers)) {}

  int gradient_buffers() const override { return 2; }
  PassObserver* observer(std::span<float>) override { return this; }
  void gradient_ready(std::size_t, std::size_t) override {}
  void between_kernels() override { engine_.poll(); }

  void step(std::span<float> params, std::span<float> grads) override {
    apply_pending(params);
    job_.set_data(grads);
    engine_.enqueue(job_);
    pending_ = grads;
  }
  void drain(std::span<float> params) override { apply_pending(params); }
  double take_hidden_seconds() override { return std::exchange(hidden_s_, 0.0); }

 private:
  void apply_pending(std::span<float> params) {
    if (pending_.empty()) return;
    const double blocked = engine_.wait_all();
    hidden_s_ += hidden_part(engine_.take_busy_seconds(), blocked);
    sgd_.step(params, pending_, inv_workers_);
    pending_ = {};
  }

  Sgd& sgd_;
  float inv_workers_;
  CommEngine engine_;
  AllreduceJob job_;
  std::span<float> pending_;  // the gradient in flight, applied at the next step
  double hidden_s_ = 0;
};

}  // namespace

std::unique_ptr<Synchronizer> make_bucketed_allreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                      std::span<const std::size_t> layer_offsets,
                                                      std::size_t parameter_count) {
  return std::make_unique<BucketedAllreduce>(config, workers, sgd, layer_offsets, parameter_count);
}

std::unique_ptr<Synchronizer> make_pipelined_allreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd) {
  return std::make_unique<PipelinedAllreduce>(config, workers, sgd);
}

}  // namespace gradsync
