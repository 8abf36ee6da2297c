// The byte kernels for AVX2 + FMA: 8 features per vector. With 16 vector registers, up to 6 outputs take two
// examples per pass of the forward product (2 x 6 accumulators, two rows, one weight) and 16 features per pass of
// the weight gradient (2 x 6 accumulators). More outputs take two forward passes of half of them each, and one
// vector of features in the weight gradient. Every lane sums its products in the same order in any of these
// layouts, so the bits do not depend on them. Compiled for AVX2
// whatever the build's flags (the target pragma below); byte_gemm.cpp calls them only where the process runs
// AVX2 or more.
#include "cpu/isa_dispatch.hpp"
#include "model/kernels/byte_gemm_isa.hpp"

#if defined(GRADSYNC_ISA_DISPATCH)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <utility>

#include "model/dataset.hpp"
#include "model/kernels/byte_gemm.hpp"

// Everything defined below, lambdas included, is compiled for AVX2; the headers above stay plain x86-64.
GRADSYNC_BEGIN_TARGET(GRADSYNC_AVX2_FEATURES)

namespace gradsync::byte_kernels {
namespace {

constexpr std::size_t kLanes = 8;
// Outputs one pass of a kernel takes with two examples (or vectors of features): 2 x 6 accumulators, with two inputs
// and a weight or delta, fill the 16 registers.
constexpr int kOutputsPerPass = 6;
static_assert(kMaxByteGemmOutputs <= 2 * kOutputsPerPass);

__m256 widen(const std::uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
// The first `count` (< 8) bytes at p, the other lanes zero, reading no byte past p + count.
__m256 widen(const std::uint8_t* p, std::size_t count) {
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, p, count);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
}
__m256i first_lanes(std::size_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane);
}
float sum_lanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// E examples against C outputs: E x C accumulators of 8 features each, summed across lanes at the end.
template <int C, int E>
void forward_examples(std::size_t f, const float* w, const std::uint8_t* const* rows, float scale, float* z,
                      std::size_t ldz) {
  __m256 acc[E][C];
  _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) acc[e][c] =
      _mm256_setzero_ps();
  const auto step = [&](std::size_t k, const __m256(&x)[E], auto load_weight) {
    _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
      __m256 wv = load_weight(w + c * f + k);
      // Keeps the weights in a register: otherwise GCC folds this load into each example's FMA, which doubles
      // the loads and makes the loop load-bound instead of FMA-bound.
      __asm__("" : "+x"(wv));
      _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) acc[e][c] = _mm256_fmadd_ps(wv, x[e], acc[e][c]);
    }
  };
  std::size_t k = 0;
  for (; k + kLanes <= f; k += kLanes) {
    __m256 x[E];
    _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) x[e] = widen(rows[e] + k);
    step(k, x, [&](const float* p) { return _mm256_loadu_ps(p); });
  }
  if (k < f) {
    __m256 x[E];
    _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e) x[e] = widen(rows[e] + k, f - k);
    const __m256i mask = first_lanes(f - k);
    step(k, x, [mask](const float* p) { return _mm256_maskload_ps(p, mask); });
  }
  _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) _Pragma("GCC unroll 16") for (int e = 0; e < E; ++e)
      z[c * ldz + e] += scale * sum_lanes(acc[e][c]);
}

template <int C>
void forward_kernel(std::size_t n, std::size_t f, const float* w, const std::uint8_t* const* rows, float scale, float* z,
                    std::size_t ldz) {
  if constexpr (C > kOutputsPerPass) {
    // Two passes over the batch, each with half the outputs and two examples: each weight loaded serves two
    // examples, and a half's weights stay in L1 (all of a 10 x 784 layer's do not, with the rows streaming through).
    constexpr int kFirst = (C + 1) / 2;
    forward_kernel<kFirst>(n, f, w, rows, scale, z, ldz);
    forward_kernel<C - kFirst>(n, f, w + kFirst * f, rows, scale, z + kFirst * ldz, ldz);
    return;
  }
  constexpr std::size_t kExamples = 2;
  std::size_t j = 0;
  for (; j + kExamples <= n; j += kExamples) {
    // The batch is random rows of the training set: ask for them a few examples ahead, as gather_batch does.
    for (std::size_t a = j + kGatherLookahead; a < std::min(n, j + kGatherLookahead + kExamples); ++a)
      request_bytes(rows[a], f);
    forward_examples<C, static_cast<int>(kExamples)>(f, w, rows + j, scale, z + j, ldz);
  }
  if (j < n) forward_examples<C, 1>(f, w, rows + j, scale, z + j, ldz);
}

// V vectors of features of every output at a time, over the whole batch: no sums across lanes, each example's
// bytes read once per pass.
template <int C>
void gradient_kernel(std::size_t n, std::size_t f, const float* delta, std::size_t ldd, const std::uint8_t* const* rows,
                     float scale, float* dw, std::span<const std::uint8_t* const> upcoming) {
  // More outputs than a pass of two vectors holds take one vector of features; split into two passes of two
  // vectors instead (the forward product's remedy), the rows are read twice and it measured no faster.
  constexpr int V = C <= kOutputsPerPass ? 2 : 1;
  constexpr std::size_t kWidth = V * kLanes;
  const __m256 s = _mm256_set1_ps(scale);
  for (std::size_t k = 0; k < f; k += kWidth) {
    const std::size_t width = std::min(kWidth, f - k);
    __m256 acc[V][C];
    _Pragma("GCC unroll 16") for (int v = 0; v < V; ++v) _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) acc[v][c] =
        _mm256_setzero_ps();
    // Each new cache line of the rows: ask for that line of each upcoming row meanwhile, one per example, so the
    // next forward product finds its rows in cache (a whole row at a time stalls).
    const std::size_t ask = (k % 64 == 0) ? std::min(upcoming.size(), n) : 0;
    const std::size_t last_line = k + 64 >= f ? f - 1 - k : 0;  // a row's last byte may start one more line
    for (std::size_t j = 0; j < n; ++j) {
      if (j < ask) {
        __builtin_prefetch(upcoming[j] + k);
        if (last_line) __builtin_prefetch(upcoming[j] + k + last_line);
      }
      __m256 x[V];
      _Pragma("GCC unroll 16") for (int v = 0; v < V; ++v) {
        const std::size_t at = k + static_cast<std::size_t>(v) * kLanes;
        const std::size_t left = k + width > at ? k + width - at : 0;  // the same for every example: predicted
        x[v] = left >= kLanes ? widen(rows[j] + at) : left > 0 ? widen(rows[j] + at, left) : _mm256_setzero_ps();
      }
      _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
        const __m256 d = _mm256_broadcast_ss(delta + c * ldd + j);
        _Pragma("GCC unroll 16") for (int v = 0; v < V; ++v) acc[v][c] = _mm256_fmadd_ps(x[v], d, acc[v][c]);
      }
    }
    _Pragma("GCC unroll 16") for (int v = 0; v < V; ++v) {
      const std::size_t at = k + static_cast<std::size_t>(v) * kLanes;
      if (at >= k + width) break;
      const std::size_t count = std::min(kLanes, k + width - at);
      _Pragma("GCC unroll 16") for (int c = 0; c < C; ++c) {
        const __m256 out = _mm256_mul_ps(acc[v][c], s);
        if (count == kLanes)
          _mm256_storeu_ps(dw + c * f + at, out);
        else
          _mm256_maskstore_ps(dw + c * f + at, first_lanes(count), out);
      }
    }
  }
}

template <std::size_t... I>
constexpr std::array<ForwardFn, sizeof...(I)> forward_table(std::index_sequence<I...>) {
  return {&forward_kernel<static_cast<int>(I) + 1>...};
}
template <std::size_t... I>
constexpr std::array<GradientFn, sizeof...(I)> gradient_table(std::index_sequence<I...>) {
  return {&gradient_kernel<static_cast<int>(I) + 1>...};
}

}  // namespace

ForwardFn avx2_forward(std::size_t outputs) {
  static constexpr auto table = forward_table(std::make_index_sequence<kMaxByteGemmOutputs>{});
  return table[outputs - 1];
}

GradientFn avx2_gradient(std::size_t outputs) {
  static constexpr auto table = gradient_table(std::make_index_sequence<kMaxByteGemmOutputs>{});
  return table[outputs - 1];
}

}  // namespace gradsync::byte_kernels

GRADSYNC_END_TARGET

#else

namespace gradsync::byte_kernels {
ForwardFn avx2_forward(std::size_t) { return nullptr; }
GradientFn avx2_gradient(std::size_t) { return nullptr; }
}  // namespace gradsync::byte_kernels

#endif
