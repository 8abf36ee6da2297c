#include "collectives/bf16.hpp"

#include <bit>

#include "cpu/isa_dispatch.hpp"

namespace gradsync {
namespace {

inline std::uint16_t bf16_bits(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. A carry into the exponent is the
  // correct rounding up (to the next binade, or to Inf past the largest bf16).
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  // NaN payloads can sit in the low bits only, where rounding would turn them into Inf: keep them NaN (quiet).
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<std::uint16_t>(nan ? (bits >> 16) | 0x40u : rounded);
}

inline float bf16_value(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

}  // namespace

// Each loop runs compiled for the process's instruction set (cpu/isa_dispatch.hpp); every set computes the same
// bits (integer operations and one float addition per element).
void to_bf16(const float* src, std::uint16_t* dst, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const float* __restrict s = src;
    std::uint16_t* __restrict d = dst;
    for (std::size_t i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
  });
}

void from_bf16(const std::uint16_t* src, float* dst, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const std::uint16_t* __restrict s = src;
    float* __restrict d = dst;
    for (std::size_t i = 0; i < n; ++i) d[i] = bf16_value(s[i]);
  });
}

void add_bf16_into(float* dst, const std::uint16_t* src, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    float* __restrict d = dst;
    const std::uint16_t* __restrict s = src;
    for (std::size_t i = 0; i < n; ++i) d[i] += bf16_value(s[i]);
  });
}

void round_to_bf16(float* data, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    for (std::size_t i = 0; i < n; ++i) data[i] = bf16_value(bf16_bits(data[i]));
  });
}

}  // namespace gradsync
