#include "trainers/gradient_jobs.hpp"

#include <utility>

#include "collectives/methods.hpp"

namespace gradsync {
namespace {

// A range's allreduce as an engine job.
class AllreduceJob final : public RangeJob {
 public:
  explicit AllreduceJob(std::unique_ptr<Allreduce> allreduce) : allreduce_(std::move(allreduce)) {}
  void set_data(std::span<float> data) override { data_ = data; }
  void start() override { allreduce_->start(data_); }
  bool test() override { return allreduce_->test(); }
  void wait() override { allreduce_->wait(); }

 private:
  std::unique_ptr<Allreduce> allreduce_;
  std::span<float> data_;
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

std::vector<ElementRange> bucket_ranges(std::size_t bucket_bytes, std::span<const std::size_t> layer_offsets,
                                        std::size_t count) {
  std::vector<ElementRange> buckets;
  std::size_t end = count;
  for (std::size_t l = layer_offsets.size(); l-- > 0;) {
    const std::size_t begin = layer_offsets[l];
    if ((end - begin) * sizeof(float) >= bucket_bytes || l == 0) {
      buckets.push_back({begin, end});
      end = begin;
    }
  }
  return buckets;
}

std::vector<ElementRange> gradient_ranges(const TrainConfig& config, std::span<const std::size_t> layer_offsets,
                                          std::size_t count) {
  if (config.buckets) return bucket_ranges(config.bucket_bytes, layer_offsets, count);
  return {ElementRange{0, count}};
}

std::unique_ptr<GradientJobs> make_allreduce_jobs(const TrainConfig& config, const Comm& workers,
                                                  std::vector<ElementRange> ranges) {
  return std::make_unique<AllreduceJobs>(config, workers, std::move(ranges));
}

}  // namespace gradsync
