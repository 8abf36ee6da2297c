#include "trainers/families/allreduce/secure_sync.hpp"

#include <cstdint>
#include <stdexcept>

#include "privacy/pair_keys.hpp"
#include "privacy/secure_aggregator.hpp"
#include "trainers/config/privacy_budget.hpp"

namespace gradsync {
namespace {

class SecureGradientSum final : public Synchronizer {
 public:
  SecureGradientSum(SecureAggregator aggregator, Sgd& sgd, std::int64_t steps_done)
      : aggregator_(std::move(aggregator)), sgd_(sgd),
        inv_workers_(1.0f / static_cast<float>(aggregator_.keys().workers())),
        step_(static_cast<std::uint64_t>(steps_done)) {}
  // The sum is written over the gradient: encode has copied it into the wire buffer before decode writes.
  void step(std::span<float> params, std::span<float> grads) override {
    aggregator_.sum(grads, grads, step_++);
    sgd_.step(params, grads, inv_workers_);
  }

 private:
  SecureAggregator aggregator_;
  Sgd& sgd_;
  float inv_workers_;
  std::uint64_t step_;  // the mask stream's nonce: a global step, never used twice under one key
};

}  // namespace

std::unique_ptr<Synchronizer> make_secure_sync(const TrainConfig& config, const SyncSetup& s) {
  if (s.parameter_count == 0) throw std::invalid_argument("make_secure_sync: needs the model's size");
  const int workers = s.workers.size();
  const FixedPoint fixed_point(secure_range_for(config.privacy, workers, config.batch), workers);
  return std::make_unique<SecureGradientSum>(
      SecureAggregator(s.workers, PairKeys::agree(s.workers), fixed_point, s.parameter_count), s.sgd, s.steps_done);
}

}  // namespace gradsync
