#include "trainers/checkpoint/replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "model/checkpoint.hpp"

namespace gradsync {

void Replicas::save(std::span<float> out) const {
  if (params_.empty() && count_ > 0) throw std::logic_error("Replicas::save: a checkpoint before the worker started");
  std::vector<float> mine(block());
  std::ranges::copy(params_, mine.begin());
  std::ranges::copy(sgd_.state(), mine.begin() + static_cast<std::ptrdiff_t>(count_));
  std::ranges::copy(workers_.all_gather(mine), out.begin());
}

void Replicas::load(std::span<const float> saved, int saved_workers, int index) {
  if (saved_workers != workers_.size() || saved.size() != state_size())
    throw CheckpointError(fmt::format(
        "checkpoint: each worker of this run keeps its own model, and the checkpoint holds one model per worker "
        "for {} worker(s) ({} values); resume it on {} worker(s), not {}",
        saved_workers, saved.size(), saved_workers, workers_.size()));
  const auto at = static_cast<std::ptrdiff_t>(block() * static_cast<std::size_t>(index));
  pending_.assign(saved.begin() + at, saved.begin() + at + static_cast<std::ptrdiff_t>(block()));
}

void Replicas::start_from(std::span<float> params) {
  params_ = params;
  if (pending_.empty()) return;
  std::copy_n(pending_.begin(), count_, params.begin());
  std::copy(pending_.begin() + static_cast<std::ptrdiff_t>(count_), pending_.end(), sgd_.state().begin());
  pending_.clear();
}

}  // namespace gradsync
