#include "compression/error_feedback.hpp"

#include <algorithm>

namespace gradsync {

ErrorFeedback::ErrorFeedback(std::unique_ptr<Compressor> compressor, std::size_t count, bool on)
    : compressor_(std::move(compressor)), on_(on), residual_(count), mine_(count) {}

void ErrorFeedback::step(std::span<float> grads) {
  start(grads);
  wait();
}

void ErrorFeedback::start(std::span<float> grads) {
  const std::size_t n = residual_.size();
  if (on_)
    for (std::size_t i = 0; i < n; ++i) residual_[i] += grads[i];
  else
    std::copy_n(grads.begin(), n, residual_.begin());
  in_flight_ = true;
  compressor_->start(residual_, mine_, grads);
}

bool ErrorFeedback::test() {
  if (!in_flight_) return true;
  if (!compressor_->test()) return false;
  finish();
  return true;
}

void ErrorFeedback::wait() {
  if (!in_flight_) return;
  compressor_->wait();
  finish();
}

void ErrorFeedback::finish() {
  in_flight_ = false;
  if (on_)
    for (std::size_t i = 0; i < residual_.size(); ++i) residual_[i] -= mine_[i];
  else
    std::fill(residual_.begin(), residual_.end(), 0.0f);
}

}  // namespace gradsync
