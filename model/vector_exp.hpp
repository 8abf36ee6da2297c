#pragma once
// e^x for x <= 0 (a softmax's z - max), written so that a loop of calls vectorizes: std::exp is a call into libm
// per element, which GCC only replaces with vector code under -ffast-math, and a softmax over 10 classes of a
// batch spends more on those calls than on the rest of its pass. Cephes' expf: x = k ln2 + r with |r| <= ln2 / 2,
// e^r from a degree-6 polynomial, 2^k put into the exponent bits. Within 2 ulp of the exact value on [-87, 0];
// below -87 it returns e^-87 (about 1.6e-38) instead of underflowing, which a probability next to a column sum
// >= 1 never notices. Every element, vector body or scalar tail, runs the same operations, so a value's result
// does not depend on its position in the batch.
#include <algorithm>
#include <bit>
#include <cstdint>

namespace gradsync {

__attribute__((always_inline)) inline float exp_nonpositive(float x) {
  constexpr float kLowest = -87.0f;  // k >= -126 below: 2^k stays a normal float
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 = hi + lo, hi exact in few bits
  x = std::max(x, kLowest);
  // Round x log2(e) to the nearest integer by adding and subtracting 1.5 * 2^23 (exact for |x log2(e)| < 2^22):
  // two adds vectorize, where std::floor or std::nearbyint stay scalar calls without -fno-trapping-math.
  constexpr float kRound = 0x1.8p23f;
  const float k = (x * kLog2e + kRound) - kRound;
  const float r = (x - k * kLn2Hi) - k * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  const float two_k = std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(k) + 127) << 23);
  return er * two_k;
}

}  // namespace gradsync
