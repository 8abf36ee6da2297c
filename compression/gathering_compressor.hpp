#pragma once
// The exchange of the compressors that send their own parts (top-k, sign): each worker encodes its part
// (part_codec.hpp), the parts are all-gathered (collectives/part_all_gather.hpp), and every worker adds them up in
// rank order into the sum, so every worker holds the same bits.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "collectives/part_all_gather.hpp"
#include "compression/compressor.hpp"
#include "compression/part_codec.hpp"

namespace gradsync {

class GatheringCompressor final : public Compressor {
 public:
  // Parts of `codec`'s size on `workers` (planned here: the contract of PartAllGather's constructor).
  GatheringCompressor(const Comm& workers, std::unique_ptr<PartCodec> codec)
      : codec_(std::move(codec)), part_(codec_->words()), gather_(workers, codec_->words()) {}

  void start(std::span<const float> in, std::span<float> mine, std::span<float> sum) override {
    codec_->encode(in, mine, part_);
    sum_ = sum;
    gather_.start(part_);
  }
  bool test() override {
    if (sum_.empty() || !gather_.test()) return sum_.empty();
    add_up();
    return true;
  }
  void wait() override {
    if (sum_.empty()) return;
    gather_.wait();
    add_up();
  }

 private:
  // The gathered parts, in rank order, into the exchange's sum; ends the exchange.
  void add_up() {
    const std::span<float> sum = std::exchange(sum_, {});
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int r = 0; r < gather_.comm().size(); ++r) codec_->add_part(gather_.part(r), sum);
  }

  std::unique_ptr<PartCodec> codec_;
  std::vector<std::int32_t> part_;
  PartAllGather gather_;
  std::span<float> sum_;  // the exchange in flight's sum; empty: none in flight
};

}  // namespace gradsync
