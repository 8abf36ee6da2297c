// sign - 1-bit scaled sign: per tensor, one scale (the mean |x|, from a double sum) and one bit per entry (set for
// x >= 0), so a worker's contribution is scale * (+1 or -1) entrywise: a part (part_codec.hpp) that the workers
// all-gather (gathering_compressor.hpp) or push to the parameter servers (compressed_push.hpp).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <stdexcept>

#include "compression/compressors.hpp"
#include "compression/gathering_compressor.hpp"

namespace gradsync {
namespace {

constexpr std::size_t kBits = 32;

class Sign final : public PartCodec {
 public:
  explicit Sign(std::span<const Tensor> tensors) : tensors_(tensors.begin(), tensors.end()) {}

  std::size_t words() const override { return tensors_.size() + bit_words(tensors_); }

  // A part is one scale per tensor (float bits), then the bits of the whole buffer, 32 to a word.
  void encode(std::span<const float> in, std::span<float> mine, std::span<std::int32_t> part) override {
    const std::size_t t = tensors_.size();
    std::fill(part.begin() + static_cast<std::ptrdiff_t>(t), part.end(), 0);
    for (std::size_t j = 0; j < t; ++j) {
      const Tensor& x = tensors_[j];
      double total = 0;
      for (std::size_t i = x.offset; i < x.offset + x.size(); ++i) total += std::abs(in[i]);
      part[j] = std::bit_cast<std::int32_t>(static_cast<float>(total / static_cast<double>(x.size())));
      for (std::size_t i = x.offset; i < x.offset + x.size(); ++i)
        if (in[i] >= 0) part[t + i / kBits] |= static_cast<std::int32_t>(std::uint32_t{1} << (i % kBits));
    }
    std::fill(mine.begin(), mine.end(), 0.0f);
    add_part(part, mine);
  }

  void add_part(std::span<const std::int32_t> part, std::span<float> out) const override {
    if (part.size() != words())
      throw std::runtime_error(fmt::format("sign: a part of {} words, planned {}", part.size(), words()));
    const std::size_t t = tensors_.size();
    for (std::size_t j = 0; j < t; ++j) {
      const Tensor& x = tensors_[j];
      const float scale = std::bit_cast<float>(part[j]);
      for (std::size_t i = x.offset; i < x.offset + x.size(); ++i) {
        const bool up = (static_cast<std::uint32_t>(part[t + i / kBits]) >> (i % kBits)) & 1u;
        out[i] += up ? scale : -scale;
      }
    }
  }

 private:
  static std::size_t bit_words(std::span<const Tensor> tensors) {
    const std::size_t n = tensors.empty() ? 0 : tensors.back().offset + tensors.back().size();
    return (n + kBits - 1) / kBits;
  }

  std::vector<Tensor> tensors_;
};

}  // namespace

extern const CompressorInfo sign_compressor = {
    .name = "sign",
    .param = "",
    .summary = "1-bit sign per entry, one scale (mean |x|) per tensor, bits packed, all-gathered, summed locally",
    .check_param = [](double) { return std::string{}; },
    .check_model = [](double, std::span<const Tensor>) { return std::string{}; },
    .make = [](const CompressorSetup& s) -> std::unique_ptr<Compressor> {
      return std::make_unique<GatheringCompressor>(s.workers, std::make_unique<Sign>(s.tensors));
    },
    .make_codec = [](double, std::span<const Tensor> tensors) -> std::unique_ptr<PartCodec> {
      return std::make_unique<Sign>(tensors);
    },
};

}  // namespace gradsync
