#include "trainers/overlap/overlapped_sync.hpp"

#include <algorithm>
#include <utility>

#include "trainers/overlap/comm_engine.hpp"

namespace gradsync {
namespace {

// Communication time not spent waiting: in flight while the worker computed.
double hidden_part(double busy_s, double blocked_s) { return std::max(0.0, busy_s - blocked_s); }

// What the three share: the jobs, their state, the optimizer and the mean's factor.
class JobSync : public Synchronizer {
 public:
  JobSync(const Comm& workers, Sgd& sgd, std::unique_ptr<GradientJobs> jobs)
      : sgd_(sgd), inv_workers_(1.0f / static_cast<float>(workers.size())), jobs_(std::move(jobs)) {}
  std::size_t state_size() const override { return jobs_->state_size(); }
  void save_state(std::span<float> out) override { jobs_->save_state(out); }
  void load_state(std::span<const float> saved, int saved_workers, int index) override {
    jobs_->load_state(saved, saved_workers, index);
  }

 protected:
  void apply(std::span<float> params, std::span<const float> sum) { sgd_.step(params, sum, inv_workers_); }
  GradientJobs& jobs() { return *jobs_; }

 private:
  Sgd& sgd_;
  float inv_workers_;
  std::unique_ptr<GradientJobs> jobs_;
};

class BucketedSync final : public JobSync, public PassObserver {
 public:
  BucketedSync(const TrainConfig& config, const Comm& workers, Sgd& sgd, std::unique_ptr<GradientJobs> jobs)
      : JobSync(workers, sgd, std::move(jobs)), engine_(config.progress, this->jobs().ranges().size()) {}

  // Every bucket is announced as the pass begins, so that its agreement check (which reads no data) can be done
  // before its gradient is: a bucket then moves data as soon as it is ready and the bucket before it is through.
  PassObserver* observer(std::span<const float>, std::span<float> grads) override {
    grads_ = grads;
    next_ = 0;
    const std::span<const ElementRange> buckets = jobs().ranges();
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      RangeJob& job = jobs().job(i);
      job.set_data(grads_.subspan(buckets[i].begin, buckets[i].size()));
      engine_.announce(job);
    }
    return this;
  }

  // Layers finish from the end of the buffer down: a bucket is complete once the finished part reaches its start.
  void gradient_ready(std::size_t begin, std::size_t) override {
    const std::span<const ElementRange> buckets = jobs().ranges();
    const std::size_t queued = next_;
    while (next_ < buckets.size() && buckets[next_].begin >= begin) ready_next();
    if (next_ != queued) engine_.poll();  // start it before the next kernel
  }
  void between_kernels() override { engine_.poll(); }

  void step(std::span<float> params, std::span<float> grads) override {
    if (grads.data() != grads_.data()) observer(params, grads);  // a pass that was not observed: every bucket starts now
    while (next_ < jobs().ranges().size()) ready_next();
    const double blocked = engine_.wait_all();
    hidden_s_ += hidden_part(engine_.take_busy_seconds(), blocked);
    apply(params, grads);
    grads_ = {};
  }

  double take_hidden_seconds() override { return std::exchange(hidden_s_, 0.0); }

 private:
  void ready_next() {
    engine_.ready();
    ++next_;
  }

  CommEngine engine_;
  std::span<float> grads_;  // the gradient the observed pass computes
  std::size_t next_ = 0;    // first bucket not ready yet
  double hidden_s_ = 0;
};

class PipelinedSync final : public JobSync, public PassObserver {
 public:
  PipelinedSync(const TrainConfig& config, const Comm& workers, Sgd& sgd, std::unique_ptr<GradientJobs> jobs)
      : JobSync(workers, sgd, std::move(jobs)), engine_(config.progress, 1) {}

  int gradient_buffers() const override { return 2; }
  PassObserver* observer(std::span<const float>, std::span<float>) override { return this; }
  void gradient_ready(std::size_t, std::size_t) override {}
  void between_kernels() override { engine_.poll(); }

  void step(std::span<float> params, std::span<float> grads) override {
    apply_pending(params);
    jobs().job(0).set_data(grads);
    engine_.enqueue(jobs().job(0));
    pending_ = grads;
  }
  void drain(std::span<float> params) override { apply_pending(params); }
  double take_hidden_seconds() override { return std::exchange(hidden_s_, 0.0); }

 private:
  void apply_pending(std::span<float> params) {
    if (pending_.empty()) return;
    const double blocked = engine_.wait_all();
    hidden_s_ += hidden_part(engine_.take_busy_seconds(), blocked);
    apply(params, pending_);
    pending_ = {};
  }

  CommEngine engine_;
  std::span<float> pending_;  // the gradient in flight, applied at the next step
  double hidden_s_ = 0;
};

class BlockingSync final : public JobSync {
 public:
  using JobSync::JobSync;
  void step(std::span<float> params, std::span<float> grads) override {
    RangeJob& job = jobs().job(0);
    job.set_data(grads);
    job.start();
    job.wait();
    apply(params, grads);
  }
};

}  // namespace

std::unique_ptr<Synchronizer> make_bucketed_sync(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                 std::unique_ptr<GradientJobs> jobs) {
  return std::make_unique<BucketedSync>(config, workers, sgd, std::move(jobs));
}

std::unique_ptr<Synchronizer> make_pipelined_sync(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                  std::unique_ptr<GradientJobs> jobs) {
  return std::make_unique<PipelinedSync>(config, workers, sgd, std::move(jobs));
}

std::unique_ptr<Synchronizer> make_blocking_sync(const Comm& workers, Sgd& sgd, std::unique_ptr<GradientJobs> jobs) {
  return std::make_unique<BlockingSync>(workers, sgd, std::move(jobs));
}

}  // namespace gradsync
