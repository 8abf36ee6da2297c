#pragma once
// The core's peak single-precision rate, measured: independent chains of fused multiply-adds at each vector width
// the CPU runs (AVX-512 and AVX2+FMA, chosen at run time, whatever -march the build used), enough chains in flight
// to cover the FMA latency on every pipe. No GEMM can run faster on one core, so a FLOP bound's rate over this says
// how near the machine's limit the kernels are (docs/compute.md). Only x86; elsewhere 0.
#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gradsync::bench {

#if defined(__x86_64__)
// Every call below is inlined into an ISA's own function (flatten), so no vector crosses a call boundary: the ABI
// warning about vector returns in a baseline build does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
namespace detail {
// `iterations` rounds of ten FMA chains on vectors of V; the asm barrier keeps every chain in a register and the
// compiler from folding the rounds. Returns GFLOP/s.
template <class V, V (*Fma)(V, V, V), V (*Splat)(float)>
double fma_chains_gflops(long iterations, int lanes) {
  V a0 = Splat(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  const V x = Splat(0.9999f), y = Splat(0.0001f);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    a0 = Fma(a0, x, y), a1 = Fma(a1, x, y), a2 = Fma(a2, x, y), a3 = Fma(a3, x, y), a4 = Fma(a4, x, y);
    a5 = Fma(a5, x, y), a6 = Fma(a6, x, y), a7 = Fma(a7, x, y), a8 = Fma(a8, x, y), a9 = Fma(a9, x, y);
    __asm__ volatile(""
                     : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                       "+x"(a9));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(iterations) * 10.0 * lanes * 2.0 / s / 1e9;
}

__attribute__((target("avx512f"))) inline __m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
__attribute__((target("avx512f"))) inline __m512 splat512(float v) { return _mm512_set1_ps(v); }
__attribute__((target("avx2,fma"))) inline __m256 fma256(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}
__attribute__((target("avx2,fma"))) inline __m256 splat256(float v) { return _mm256_set1_ps(v); }

// Only called where the CPU has the ISA (fma_peaks checks).
__attribute__((target("avx512f"), flatten)) inline double avx512_gflops() {
  return fma_chains_gflops<__m512, fma512, splat512>(20'000'000, 16);
}
__attribute__((target("avx2,fma"), flatten)) inline double avx2_gflops() {
  return fma_chains_gflops<__m256, fma256, splat256>(40'000'000, 8);
}
}  // namespace detail
#pragma GCC diagnostic pop
#endif

// GFLOP/s of this core at each vector width the CPU has, best of `rounds` runs of about 0.1 s each; 0 for a width
// it lacks. Both are kept because their ratio tells how wide the FMA units are: a core that runs AVX-512 on
// 256-bit units gets no more from 512-bit vectors than from AVX2.
struct FmaPeaks {
  double avx512 = 0;
  double avx2 = 0;
  double widest() const { return std::max(avx512, avx2); }
};
inline FmaPeaks fma_peaks(int rounds = 3) {
  FmaPeaks p;
#if defined(__x86_64__)
  const bool has512 = __builtin_cpu_supports("avx512f");
  const bool has256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  for (int r = 0; r < rounds; ++r) {
    if (has512) p.avx512 = std::max(p.avx512, detail::avx512_gflops());
    if (has256) p.avx2 = std::max(p.avx2, detail::avx2_gflops());
  }
#endif
  return p;
}

// GFLOP/s of this core at its widest FMA (0 without FMA).
inline double fma_peak_gflops(int rounds = 3) { return fma_peaks(rounds).widest(); }

}  // namespace gradsync::bench
