// topk:F - each worker sends the largest F of its gradient's entries by magnitude, as values and indices: a part
// (part_codec.hpp) that the workers all-gather (gathering_compressor.hpp) or push to the parameter servers
// (compressed_push.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "compression/compressors.hpp"
#include "compression/gathering_compressor.hpp"

namespace gradsync {
namespace {

// Entries kept of `count`: F of them rounded up, at least one.
std::size_t kept(double fraction, std::size_t count) {
  const auto k = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(count)));
  return std::clamp<std::size_t>(k, 1, count);
}

class TopK final : public PartCodec {
 public:
  TopK(std::size_t count, double fraction) : k_(kept(fraction, count)), order_(count) {
    if (count >= (std::size_t{1} << 31)) throw std::invalid_argument("topk: indices are 31-bit; the model is larger");
  }

  std::size_t words() const override { return 2 * k_; }

  // A part is k values (float bits) then their k indices, ascending.
  void encode(std::span<const float> in, std::span<float> mine, std::span<std::int32_t> part) override {
    select(in);
    std::fill(mine.begin(), mine.end(), 0.0f);
    for (std::size_t j = 0; j < k_; ++j) {
      const std::uint32_t i = order_[j];
      mine[i] = in[i];
      part[j] = std::bit_cast<std::int32_t>(in[i]);
      part[k_ + j] = static_cast<std::int32_t>(i);
    }
  }

  void add_part(std::span<const std::int32_t> part, std::span<float> sum) const override {
    if (part.size() != words())
      throw std::runtime_error(fmt::format("topk: a part of {} words, planned {}", part.size(), words()));
    const std::size_t k = k_;
    for (std::size_t j = 0; j < k; ++j) {
      const auto i = static_cast<std::size_t>(static_cast<std::uint32_t>(part[k + j]));
      if (i >= sum.size())
        throw std::runtime_error(fmt::format("topk: index {} from the wire, beyond {}", i, sum.size()));
      sum[i] += std::bit_cast<float>(part[j]);
    }
  }

 private:
  // order_[0, k) := the indices of the k largest |in|, ties to the lower index (the same choice on every
  // implementation), ascending.
  void select(std::span<const float> in) {
    std::iota(order_.begin(), order_.end(), 0u);
    auto larger = [in](std::uint32_t a, std::uint32_t b) {
      const float x = std::abs(in[a]), y = std::abs(in[b]);
      return x > y || (x == y && a < b);
    };
    if (k_ < order_.size()) std::nth_element(order_.begin(), order_.begin() + k_ - 1, order_.end(), larger);
    std::sort(order_.begin(), order_.begin() + k_);
  }

  std::size_t k_;
  std::vector<std::uint32_t> order_;
};

std::string check_fraction(double f) {
  if (f > 0 && f <= 1) return {};
  return fmt::format("topk:F needs a fraction F in (0, 1], got {}", f);
}

std::size_t parameter_count(std::span<const Tensor> tensors) {
  return tensors.empty() ? 0 : tensors.back().offset + tensors.back().size();
}

}  // namespace

extern const CompressorInfo topk_compressor = {
    .name = "topk",
    .param = "F",
    .summary = "each worker's largest F of entries by magnitude (values + indices), all-gathered, summed locally",
    .check_param = check_fraction,
    .check_model = [](double, std::span<const Tensor>) { return std::string{}; },
    .make = [](const CompressorSetup& s) -> std::unique_ptr<Compressor> {
      return std::make_unique<GatheringCompressor>(s.workers,
                                                   std::make_unique<TopK>(parameter_count(s.tensors), s.param));
    },
    .make_codec = [](double fraction, std::span<const Tensor> tensors) -> std::unique_ptr<PartCodec> {
      return std::make_unique<TopK>(parameter_count(tensors), fraction);
    },
};

}  // namespace gradsync
