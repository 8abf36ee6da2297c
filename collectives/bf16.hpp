#pragma once
// bfloat16 on the wire: the top 16 bits of a float32 (its 8-bit exponent, 7 of its 23 mantissa bits), rounded to
// nearest, ties to even. Halves the bytes a float allreduce moves; keeps float32's exponent range, so small
// gradients do not flush to zero as they do in IEEE half (below 6e-8). The relative rounding error is at most 2^-8
// (8 significant bits) for normal floats; float32 subnormals (below 2^-126) keep fewer bits.
// All loops are branch-free and vectorize; src and dst never overlap.
#include <cstddef>
#include <cstdint>

namespace gradsync {

// dst[i] = bf16(src[i]) for i < n. NaN stays NaN (quiet), +-Inf stays +-Inf; finite values beyond bf16's
// largest round to +-Inf, as any float rounding does.
void to_bf16(const float* src, std::uint16_t* dst, std::size_t n);
// dst[i] = float(src[i]) for i < n: exact (every bf16 is a float).
void from_bf16(const std::uint16_t* src, float* dst, std::size_t n);
// dst[i] += float(src[i]) for i < n, in float32.
void add_bf16_into(float* dst, const std::uint16_t* src, std::size_t n);
// data[i] = float(bf16(data[i])) for i < n: what a rank holds after sending its values as bf16 and receiving them
// back, so that the sender and the receivers of a value agree bit for bit.
void round_to_bf16(float* data, std::size_t n);

}  // namespace gradsync
