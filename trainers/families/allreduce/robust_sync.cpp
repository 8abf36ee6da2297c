#include "trainers/families/allreduce/robust_sync.hpp"

#include <algorithm>

#include "collectives/robust/robust_aggregation.hpp"
#include "model/checkpoint.hpp"

namespace gradsync {
namespace {

class RobustGradientSync final : public Synchronizer {
 public:
  RobustGradientSync(std::unique_ptr<RobustAggregation> aggregation, Sgd& sgd, std::size_t state)
      : aggregation_(std::move(aggregation)), sgd_(sgd), state_(state) {}
  void step(std::span<float> params, std::span<float> grads) override {
    aggregation_->run(grads);
    sgd_.step(params, grads);  // the aggregate is already a mean: no 1 / workers
  }
  std::size_t state_size() const override { return state_; }
  // cclip's reference, zeros before the first step (the reference it starts from).
  void save_state(std::span<float> out) override {
    const std::span<const float> reference = aggregation_->reference();
    std::ranges::fill(out, 0.0f);
    if (reference.size() == out.size()) std::ranges::copy(reference, out.begin());
  }
  void load_state(std::span<const float> saved, int /*saved_workers*/, int /*index*/) override {
    if (saved.size() != state_) throw CheckpointError("robust aggregation: the checkpoint holds another state size");
    if (state_ > 0) aggregation_->set_reference(saved);
  }

 private:
  std::unique_ptr<RobustAggregation> aggregation_;
  Sgd& sgd_;
  std::size_t state_;
};

}  // namespace

std::size_t robust_state_size(const TrainConfig& config, std::size_t parameter_count) {
  return config.robust.aggregation.kind == AggregatorKind::cclip ? parameter_count : 0;
}

std::unique_ptr<Synchronizer> make_robust_sync(const TrainConfig& config, const SyncSetup& s) {
  const RobustnessOptions& r = config.robust;
  return std::make_unique<RobustGradientSync>(make_robust_aggregation(s.workers, r.aggregation.text, r.byzantine), s.sgd,
                                              robust_state_size(config, s.parameter_count));
}

}  // namespace gradsync
