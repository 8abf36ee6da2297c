#include "attacks/colluders.hpp"

#include <cmath>

namespace gradsync {

void ColluderMoments::run(std::span<const float> mine) {
  const std::size_t n = mine.size();
  const double m = comm_.size();
  sums_.assign(mine.begin(), mine.end());
  comm_.sum_in_place(sums_);
  mean_.resize(n);
  for (std::size_t j = 0; j < n; ++j) mean_[j] = static_cast<float>(sums_[j] / m);
  // Deviations from the float mean every colluder holds alike, so the second sum is the same on every colluder.
  for (std::size_t j = 0; j < n; ++j) sums_[j] = std::pow(static_cast<double>(mine[j]) - mean_[j], 2);
  comm_.sum_in_place(sums_);
  std_.resize(n);
  for (std::size_t j = 0; j < n; ++j) std_[j] = m > 1 ? static_cast<float>(std::sqrt(sums_[j] / (m - 1))) : 0.0f;
}

}  // namespace gradsync
