// host_speed: this machine's single-core FMA peak in GFLOP/s, one number on stdout. scripts/simulate.sh calibrate
// stores it in bench/sim/host-speed.txt; the platforms' host speed and smpi/host-speed are both set from it
// (bench/sim/make_platforms.py says why). The loop is bench/fma_peak.hpp's (ten independent AVX2 FMA chains), but
// timed in this thread's CPU time, as SMPI times computation bursts: on a loaded machine the wall clock would count
// the time other processes held the core.
//   c++ -O2 -march=native -std=c++20 bench/sim/host_speed.cpp -o build-smpi/host_speed
#include <time.h>

#include <algorithm>
#include <cstdio>

#if defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

#if defined(__FMA__)
double fma_gflops(long iterations) {
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  const __m256 x = _mm256_set1_ps(0.9999f), y = _mm256_set1_ps(0.0001f);
  const double start = thread_cpu_seconds();
  for (long i = 0; i < iterations; ++i) {
    a0 = _mm256_fmadd_ps(a0, x, y), a1 = _mm256_fmadd_ps(a1, x, y), a2 = _mm256_fmadd_ps(a2, x, y);
    a3 = _mm256_fmadd_ps(a3, x, y), a4 = _mm256_fmadd_ps(a4, x, y), a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y), a7 = _mm256_fmadd_ps(a7, x, y), a8 = _mm256_fmadd_ps(a8, x, y);
    a9 = _mm256_fmadd_ps(a9, x, y);
    __asm__ volatile(""
                     : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                       "+x"(a9));
  }
  const double seconds = thread_cpu_seconds() - start;
  return static_cast<double>(iterations) * 10.0 * 8 * 2.0 / seconds / 1e9;
}
#endif

}  // namespace

int main() {
#if defined(__FMA__)
  double best = 0;
  for (int round = 0; round < 5; ++round) best = std::max(best, fma_gflops(40'000'000));
  std::printf("%.1f\n", best);
  return 0;
#else
  std::fprintf(stderr, "host_speed: this build has no FMA (build with -march=native on x86 with FMA)\n");
  return 1;
#endif
}
