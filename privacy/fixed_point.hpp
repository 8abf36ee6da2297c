#pragma once
// Fixed point in Z_2^32 for secure aggregation: a float clipped to [-R, R] becomes round(x * scale) in two's
// complement, with scale = floor((2^31 - 1) / p) / R, so that a code is at most M = floor((2^31 - 1) / p) in
// magnitude, the sum of p of them stays in [-(2^31 - 1), 2^31 - 1], and the wrapping uint32 sum read back as int32 is
// the exact integer sum: the headroom for p workers costs log2(p) bits of resolution (a step of R / M, about
// p R / 2^31).
#include <cstddef>
#include <cstdint>
#include <span>

namespace gradsync {

class FixedPoint {
 public:
  // Values in [-range, range] (range > 0, finite) summed over `workers` >= 1 ranks; std::invalid_argument
  // otherwise.
  FixedPoint(double range, int workers);
  double range() const { return range_; }
  double scale() const { return scale_; }
  int workers() const { return workers_; }

  // out[i] = the code of clamp(values[i], -R, R); NaN becomes 0. Equal sizes (std::invalid_argument). Returns how
  // many values were clipped to the range (the caller may count them: a range too small biases the sum).
  std::size_t quantize(std::span<const float> values, std::span<std::uint32_t> out) const;
  // out[i] = sum[i] read as the int32 sum of at most workers() codes, over scale. Equal sizes.
  void dequantize(std::span<const std::uint32_t> sum, std::span<float> out) const;
  // The integer one code stands for, as int32 (two's complement).
  static std::int32_t as_signed(std::uint32_t code) { return static_cast<std::int32_t>(code); }

 private:
  double range_, scale_;
  long max_code_;  // floor((2^31 - 1) / workers)
  int workers_;
};

}  // namespace gradsync
