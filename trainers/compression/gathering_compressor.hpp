#pragma once
// The exchange shared by the compressors that send their own parts (top-k, sign): each worker encodes its part into
// 32-bit words, the parts are all-gathered (collectives/part_all_gather.hpp), and every worker decodes them in rank
// order into the sum, so every worker holds the same bits. A compressor of this kind says only how it encodes a
// part and how it adds one up.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "collectives/part_all_gather.hpp"
#include "trainers/compression/compressor.hpp"

namespace gradsync {

class GatheringCompressor : public Compressor {
 public:
  void start(std::span<const float> in, std::span<float> mine, std::span<float> sum) final {
    encode(in, mine, part_);
    sum_ = sum;
    gather_.start(part_);
  }
  bool test() final {
    if (sum_.empty() || !gather_.test()) return sum_.empty();
    add_up();
    return true;
  }
  void wait() final {
    if (sum_.empty()) return;
    gather_.wait();
    add_up();
  }

 protected:
  // Parts of `words` words on `workers` (planned here: the contract of PartAllGather's constructor).
  GatheringCompressor(const Comm& workers, std::size_t words) : part_(words), gather_(workers, words) {}
  // Writes this worker's part of `in` into `part` (all of it) and its own contribution, as the others decode it,
  // into `mine` (the whole model).
  virtual void encode(std::span<const float> in, std::span<float> mine, std::span<std::int32_t> part) = 0;
  // Adds the contribution a part encodes into `out` (the whole model).
  virtual void add_part(std::span<const std::int32_t> part, std::span<float> out) const = 0;

 private:
  // The gathered parts, in rank order, into the exchange's sum; ends the exchange.
  void add_up() {
    const std::span<float> sum = std::exchange(sum_, {});
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int r = 0; r < gather_.comm().size(); ++r) add_part(gather_.part(r), sum);
  }

  std::vector<std::int32_t> part_;
  PartAllGather gather_;
  std::span<float> sum_;  // the exchange in flight's sum; empty: none in flight
};

}  // namespace gradsync
