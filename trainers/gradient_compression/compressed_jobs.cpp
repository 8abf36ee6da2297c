#include "trainers/gradient_compression/compressed_jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "compression/compressors.hpp"
#include "compression/error_feedback.hpp"
#include "model/checkpoint.hpp"

namespace gradsync {
namespace {

std::size_t count_of(const std::vector<Tensor>& tensors) { return tensors.back().offset + tensors.back().size(); }

// The tensors inside `range`, offsets rebased to its start. The range must hold whole tensors (std::logic_error).
std::vector<Tensor> tensors_in(const std::vector<Tensor>& tensors, ElementRange range) {
  std::vector<Tensor> inside;
  for (Tensor t : tensors)
    if (t.offset >= range.begin && t.offset < range.end) {
      t.offset -= range.begin;
      inside.push_back(t);
    }
  if (inside.empty() || count_of(inside) != range.size())
    throw std::logic_error(
        fmt::format("compression: the range [{}, {}) does not hold whole tensors", range.begin, range.end));
  return inside;
}

std::size_t compressor_state_size(const CompressionChoice& c, const std::vector<Tensor>& tensors) {
  return c.compressor->state_size ? c.compressor->state_size(c.param, tensors) : 0;
}

// One range's error-fed compressor as an engine job.
class CompressedJob final : public RangeJob {
 public:
  CompressedJob(std::unique_ptr<Compressor> compressor, std::size_t count, bool on)
      : feedback_(std::move(compressor), count, on) {}
  void set_data(std::span<float> data) override { data_ = data; }
  void start() override { feedback_.start(data_); }
  bool test() override { return feedback_.test(); }
  void wait() override { feedback_.wait(); }
  ErrorFeedback& feedback() { return feedback_; }

 private:
  ErrorFeedback feedback_;
  std::span<float> data_;
};

class CompressedJobs final : public GradientJobs {
 public:
  CompressedJobs(const TrainConfig& config, const SyncSetup& s, std::vector<ElementRange> ranges)
      : ranges_(std::move(ranges)), workers_(s.workers), on_(config.compression.error_feedback) {
    const std::vector<Tensor> all = model_tensors(s.layers);
    const CompressionChoice& choice = config.compression;
    for (const ElementRange& range : ranges_) {
      const std::vector<Tensor> tensors = tensors_in(all, range);
      const auto first = std::ranges::find_if(all, [&](const Tensor& t) { return t.offset >= range.begin; });
      const CompressorSetup setup{s.workers,    config.sync.allreduce, allreduce_options(config), tensors,
                                  choice.param, config.seed,           {all.begin(), first}};
      jobs_.push_back(std::make_unique<CompressedJob>(choice.compressor->make(setup), range.size(), on_));
      own_size_ += jobs_.back()->feedback().compressor().state().size();
    }
    residual_.resize(on_ ? count_of(all) : 0);
  }

  std::span<const ElementRange> ranges() const override { return ranges_; }
  RangeJob& job(std::size_t i) override { return *jobs_[i]; }
  std::size_t state_size() const override { return saved_size(workers_.size()); }

  void save_state(std::span<float> out) override {
    auto at = out.begin();
    for (const auto& job : jobs_) at = std::ranges::copy(job->feedback().compressor().state(), at).out;
    if (!on_) return;
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      std::ranges::copy(jobs_[i]->feedback().residual(), residual_.begin() + offset(i));
    const std::vector<float> all = workers_.all_gather(residual_);
    std::ranges::copy(all, at);
  }

  // Workers keep their index's residual; those at an index the saved run did not have start from zero, and the
  // saved residuals of indices this run does not have are dropped (error_feedback.hpp says why).
  void load_state(std::span<const float> saved, int saved_workers, int index) override {
    if (saved.size() != saved_size(saved_workers))
      throw CheckpointError(
          fmt::format("checkpoint: its compression state holds {} values, but this compressor on "
                      "the checkpoint's {} workers keeps {}",
                      saved.size(), saved_workers, saved_size(saved_workers)));
    std::size_t at = 0;
    for (const auto& job : jobs_) {
      const std::span<float> own = job->feedback().compressor().state();
      std::copy_n(saved.begin() + static_cast<std::ptrdiff_t>(at), own.size(), own.begin());
      at += own.size();
    }
    const bool kept = on_ && index < saved_workers;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const std::span<float> residual = jobs_[i]->feedback().residual();
      std::fill(residual.begin(), residual.end(), 0.0f);
      if (kept)
        std::copy_n(saved.begin() + offset(i) + static_cast<std::ptrdiff_t>(at + residual_.size() * index),
                    residual.size(), residual.begin());
    }
  }

 private:
  std::ptrdiff_t offset(std::size_t i) const { return static_cast<std::ptrdiff_t>(ranges_[i].begin); }
  std::size_t saved_size(int workers) const { return own_size_ + residual_.size() * static_cast<std::size_t>(workers); }

  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<CompressedJob>> jobs_;
  Comm workers_;
  bool on_;
  std::size_t own_size_ = 0;     // the compressors' state
  std::vector<float> residual_;  // this worker's whole residual, put together to be saved (empty without feedback)
};

}  // namespace

std::unique_ptr<GradientJobs> make_compressed_jobs(const TrainConfig& config, const SyncSetup& s,
                                                   std::vector<ElementRange> ranges) {
  if (s.layers.empty()) throw std::invalid_argument("make_compressed_jobs: needs the model's layers");
  const CompressionChoice& choice = config.compression;
  const std::vector<Tensor> tensors = model_tensors(s.layers);
  if (const std::string problem = choice.compressor->check_model(choice.param, tensors); !problem.empty())
    throw std::invalid_argument("--compress " + problem);
  return std::make_unique<CompressedJobs>(config, s, std::move(ranges));
}

std::size_t compressed_state_size(const TrainConfig& config, std::span<const LayerShape> layers, int workers) {
  const CompressionChoice& c = config.compression;
  if (!c.enabled()) return 0;
  const std::vector<Tensor> tensors = model_tensors(layers);
  std::size_t size = 0;
  for (const ElementRange& range : gradient_ranges(config, layers, count_of(tensors)))
    size += compressor_state_size(c, tensors_in(tensors, range));
  return size + (c.error_feedback ? count_of(tensors) * static_cast<std::size_t>(workers) : 0);
}

}  // namespace gradsync
