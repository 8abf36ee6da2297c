#include "privacy/fixed_point.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gradsync {

FixedPoint::FixedPoint(double range, int workers) : range_(range), scale_(0), max_code_(0), workers_(workers) {
  if (!(range > 0) || !std::isfinite(range) || workers < 1)
    throw std::invalid_argument(fmt::format(
        "FixedPoint: needs a finite range > 0 and at least one worker, not range {} for {} workers", range, workers));
  max_code_ = 2147483647 / workers;
  scale_ = static_cast<double>(max_code_) / range;
}

std::size_t FixedPoint::quantize(std::span<const float> values, std::span<std::uint32_t> out) const {
  if (values.size() != out.size())
    throw std::invalid_argument(fmt::format("FixedPoint::quantize: {} values into {} codes", values.size(), out.size()));
  std::size_t clipped = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double x = values[i];
    if (std::isnan(x)) x = 0;
    if (x > range_ || x < -range_) {
      ++clipped;
      x = std::clamp(x, -range_, range_);
    }
    // |code| <= floor((2^31 - 1) / p): p of them cannot pass the int32 range (the clamp holds it against rounding).
    const auto code = static_cast<std::int32_t>(std::clamp<long>(std::lround(x * scale_), -max_code_, max_code_));
    out[i] = static_cast<std::uint32_t>(code);
  }
  return clipped;
}

void FixedPoint::dequantize(std::span<const std::uint32_t> sum, std::span<float> out) const {
  if (sum.size() != out.size())
    throw std::invalid_argument(fmt::format("FixedPoint::dequantize: {} codes into {} values", sum.size(), out.size()));
  for (std::size_t i = 0; i < sum.size(); ++i) out[i] = static_cast<float>(as_signed(sum[i]) / scale_);
}

}  // namespace gradsync
