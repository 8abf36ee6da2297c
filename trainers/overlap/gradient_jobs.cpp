#include "trainers/overlap/gradient_jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "collectives/methods.hpp"

namespace gradsync {
namespace {

// A range's allreduce as an engine job.
class AllreduceJob final : public RangeJob {
 public:
  explicit AllreduceJob(std::unique_ptr<Allreduce> allreduce) : allreduce_(std::move(allreduce)) {}
  void set_data(std::span<float> data) override { data_ = data; }
  // The agreement check goes ahead: with progress by calls, a check left to the job's turn would cost a whole
  // interval between two polls for each bucket before its data could move.
  void start_ahead() override {
    allreduce_->start_held(data_);
    ahead_ = true;
  }
  void test_ahead() override { allreduce_->test(); }
  void start() override {
    if (std::exchange(ahead_, false))
      allreduce_->release();
    else
      allreduce_->start(data_);
  }
  bool test() override { return allreduce_->test(); }
  void wait() override { allreduce_->wait(); }

 private:
  std::unique_ptr<Allreduce> allreduce_;
  std::span<float> data_;
  bool ahead_ = false;  // start_ahead() ran: start() releases the data movement
};

class AllreduceJobs final : public GradientJobs {
 public:
  AllreduceJobs(const TrainConfig& config, const Comm& workers, std::vector<ElementRange> ranges)
      : ranges_(std::move(ranges)) {
    for (std::size_t i = 0; i < ranges_.size(); ++i)
      jobs_.push_back(std::make_unique<AllreduceJob>(config.sync.allreduce->make(workers, allreduce_options(config))));
  }
  std::span<const ElementRange> ranges() const override { return ranges_; }
  RangeJob& job(std::size_t i) override { return *jobs_[i]; }

 private:
  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<AllreduceJob>> jobs_;
};

}  // namespace

std::vector<ElementRange> bucket_ranges(std::size_t bucket_bytes, std::span<const LayerShape> layers, std::size_t count,
                                        bool between_rows) {
  std::vector<ElementRange> buckets;
  std::size_t end = count;
  const auto close_at = [&](std::size_t begin, bool last) {
    if ((end - begin) * sizeof(float) >= bucket_bytes || last) {
      buckets.push_back({begin, end});
      end = begin;
    }
  };
  for (std::size_t l = layers.size(); l-- > 0;) {
    if (between_rows) {
      // Row starts inside the layer's weights, pieces of at least bucket_bytes and kMinBucketRows rows each.
      const std::size_t in = layers[l].inputs, out = layers[l].outputs;
      const std::size_t pieces =
          std::clamp<std::size_t>(out * in * sizeof(float) / std::max<std::size_t>(bucket_bytes, 1), 1,
                                  std::max<std::size_t>(out / kMinBucketRows, 1));
      const std::size_t rows = out / pieces;
      for (std::size_t piece = pieces; piece-- > 1;) close_at(layers[l].offset + piece * rows * in, false);
    }
    close_at(layers[l].offset, l == 0);
  }
  return buckets;
}

std::vector<ElementRange> gradient_ranges(const TrainConfig& config, std::span<const LayerShape> layers,
                                          std::size_t count, bool between_rows) {
  if (config.buckets) return bucket_ranges(config.bucket_bytes, layers, count, between_rows);
  return {ElementRange{0, count}};
}

std::unique_ptr<GradientJobs> make_allreduce_jobs(const TrainConfig& config, const Comm& workers,
                                                  std::vector<ElementRange> ranges) {
  return std::make_unique<AllreduceJobs>(config, workers, std::move(ranges));
}

}  // namespace gradsync
