// The byte kernels for AVX-512 (F, BW, VL): 16 features per vector, two examples per pass of the forward product,
// 32 features per pass of the weight gradient. Compiled for AVX-512 whatever the build's flags (GRADSYNC_BEGIN_TARGET
// below); byte_gemm.cpp calls them only where the process runs AVX-512.
#include "cpu/isa_dispatch.hpp"
#include "model/kernels/byte_gemm_isa.hpp"

#if defined(GRADSYNC_ISA_DISPATCH)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include "model/dataset.hpp"
#include "model/kernels/byte_gemm.hpp"

// Everything defined below, lambdas included, is compiled for AVX-512; the headers above stay plain x86-64.
GRADSYNC_BEGIN_TARGET(GRADSYNC_AVX512_FEATURES)

namespace gradsync::byte_kernels {
namespace {

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge operand, and it then warns, where they
// are inlined, that the value is uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

__m512 widen(const std::uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
__m512 widen(const std::uint8_t* p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p)));
}
__mmask16 first_lanes(std::size_t count) {
  return count >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << count) - 1);
}

// E examples against C outputs: E x C accumulators of 16 features each, summed across lanes at the end.
template <int C, int E>
void forward_examples(std::size_t f, const float* w, const std::uint8_t* const* rows, float scale, float* z,
                      std::size_t ldz) {
  __m512 acc[E][C];
  _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) acc[e][c] =
      _mm512_setzero_ps();
  const auto step = [&](std::size_t k, __mmask16 m) {
    __m512 x[E];
    _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) x[e] = m == 0xffff ? widen(rows[e] + k) : widen(rows[e] + k, m);
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
      __m512 wv = _mm512_maskz_loadu_ps(m, w + c * f + k);
      // Keeps the weights in a register: otherwise GCC folds this load into each example's FMA, which doubles
      // the loads and makes the loop load-bound instead of FMA-bound.
      __asm__("" : "+v"(wv));
      _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) acc[e][c] = _mm512_fmadd_ps(wv, x[e], acc[e][c]);
    }
  };
  std::size_t k = 0;
  for (; k + 16 <= f; k += 16) step(k, 0xffff);
  if (k < f) step(k, first_lanes(f - k));
  _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e)
      z[c * ldz + e] += scale * _mm512_reduce_add_ps(acc[e][c]);
}

template <int C>
void forward_kernel(std::size_t n, std::size_t f, const float* w, const std::uint8_t* const* rows, float scale, float* z,
                    std::size_t ldz) {
  std::size_t j = 0;
  for (; j + 2 <= n; j += 2) {
    // The batch is random rows of the training set: ask for them a few examples ahead, as gather_batch does.
    for (std::size_t a = j + kGatherLookahead; a < std::min(n, j + kGatherLookahead + 2); ++a) request_bytes(rows[a], f);
    forward_examples<C, 2>(f, w, rows + j, scale, z + j, ldz);
  }
  if (j < n) forward_examples<C, 1>(f, w, rows + j, scale, z + j, ldz);
}

// 32 features of every output at a time, over the whole batch: no sums across lanes, each example's bytes read
// once per pass (the line each example is in stays in L1 for the two passes that read it).
template <int C>
void gradient_kernel(std::size_t n, std::size_t f, const float* delta, std::size_t ldd, const std::uint8_t* const* rows,
                     float scale, float* dw, std::span<const std::uint8_t* const> upcoming) {
  const __m512 s = _mm512_set1_ps(scale);
  for (std::size_t k = 0; k < f; k += 32) {
    const std::size_t width = std::min<std::size_t>(32, f - k);
    const __mmask16 m0 = first_lanes(width), m1 = width > 16 ? first_lanes(width - 16) : __mmask16{0};
    __m512 a0[C], a1[C];
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) a0[c] = a1[c] = _mm512_setzero_ps();
    // Every other pass starts a new cache line of each row: ask for that line of each upcoming row meanwhile, one
    // per example, so the next forward product finds its rows in cache (a whole row at a time stalls).
    const std::size_t ask = (k % 64 == 0) ? std::min(upcoming.size(), n) : 0;
    const std::size_t last_line = k + 64 >= f ? f - 1 - k : 0;  // a row's last byte may start one more line
    const auto pass = [&](auto load0, auto load1) {
      for (std::size_t j = 0; j < n; ++j) {
        if (j < ask) {
          __builtin_prefetch(upcoming[j] + k);
          if (last_line) __builtin_prefetch(upcoming[j] + k + last_line);
        }
        const __m512 x0 = load0(rows[j] + k), x1 = load1(rows[j] + k + 16);
        _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
          const __m512 d = _mm512_set1_ps(delta[c * ldd + j]);
          a0[c] = _mm512_fmadd_ps(x0, d, a0[c]);
          a1[c] = _mm512_fmadd_ps(x1, d, a1[c]);
        }
      }
    };
    if (width == 32)
      pass([&](const std::uint8_t* p) { return widen(p); }, [&](const std::uint8_t* p) { return widen(p); });
    else
      pass([m0](const std::uint8_t* p) { return widen(p, m0); }, [m1](const std::uint8_t* p) { return widen(p, m1); });
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
      _mm512_mask_storeu_ps(dw + c * f + k, m0, _mm512_mul_ps(a0[c], s));
      if (m1) _mm512_mask_storeu_ps(dw + c * f + k + 16, m1, _mm512_mul_ps(a1[c], s));
    }
  }
}

#pragma GCC diagnostic pop

template <std::size_t... I>
constexpr std::array<ForwardFn, sizeof...(I)> forward_table(std::index_sequence<I...>) {
  return {&forward_kernel<static_cast<int>(I) + 1>...};
}
template <std::size_t... I>
constexpr std::array<GradientFn, sizeof...(I)> gradient_table(std::index_sequence<I...>) {
  return {&gradient_kernel<static_cast<int>(I) + 1>...};
}

}  // namespace

ForwardFn avx512_forward(std::size_t outputs) {
  static constexpr auto table = forward_table(std::make_index_sequence<kMaxByteGemmOutputs>{});
  return table[outputs - 1];
}

GradientFn avx512_gradient(std::size_t outputs) {
  static constexpr auto table = gradient_table(std::make_index_sequence<kMaxByteGemmOutputs>{});
  return table[outputs - 1];
}

}  // namespace gradsync::byte_kernels

GRADSYNC_END_TARGET

#else

namespace gradsync::byte_kernels {
ForwardFn avx512_forward(std::size_t) { return nullptr; }
GradientFn avx512_gradient(std::size_t) { return nullptr; }
}  // namespace gradsync::byte_kernels

#endif
