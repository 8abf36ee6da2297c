#pragma once
// ln x for positive normal floats (a softmax probability for its loss), written so that a loop of calls vectorizes,
// for the reason vector_exp.hpp gives: a libm call per column costs a batch-256 softmax more than its exps.
// Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m from a degree-9 polynomial in m - 1, e ln 2 added in
// two parts. Within 1 ulp of the correctly rounded value for every float in [1e-30, 1].
// Not for zero, negative, subnormal, infinite or NaN x.
#include <bit>
#include <cstdint>

namespace gradsync {

__attribute__((always_inline)) inline float log_positive(float x) {
  constexpr float kSqrtHalf = 0.707106781186547524f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const auto bits = std::bit_cast<std::uint32_t>(x);
  // x = m 2^e with m in [1/2, 1): the exponent field less its bias and one, the mantissa under exponent -1.
  float e = static_cast<float>(static_cast<std::int32_t>(bits >> 23) - 126);
  float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f000000u);
  // m in [sqrt(1/2), sqrt(2)) keeps m - 1 small either side of 0: below sqrt(1/2), take 2m and one less exponent.
  // Selects between constants only: GCC does not if-convert a select of two computed floats (either might trap).
  const bool low = m < kSqrtHalf;
  e -= low ? 1.0f : 0.0f;
  const float f = m * (low ? 2.0f : 1.0f) - 1.0f;
  const float f2 = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * f2 + e * kLn2Lo - 0.5f * f2;
  return (f + y) + e * kLn2Hi;
}

}  // namespace gradsync
