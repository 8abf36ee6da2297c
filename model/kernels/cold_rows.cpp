#include "model/kernels/cold_rows.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace gradsync {

ColdRows::ColdRows(std::size_t examples, std::size_t features) : examples_(std::max<std::size_t>(examples, 1)) {
  const std::size_t pool_rows = std::max(examples_, kPoolBytes / std::max<std::size_t>(features, 1));
  batches_ = pool_rows / examples_;
  pool_.assign(pool_rows * features, 77);
  std::vector<std::size_t> order(pool_rows);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::uint32_t x = 12345;  // a fixed LCG: the same order in every run
  for (std::size_t i = pool_rows; i > 1; --i) std::swap(order[i - 1], order[(x = x * 1664525u + 1013904223u) % i]);
  rows_.reserve(batches_ * examples_);
  for (std::size_t i = 0; i < batches_ * examples_; ++i) rows_.push_back(pool_.data() + order[i] * features);
}

}  // namespace gradsync
