#pragma once
// Runs a hot loop compiled for the instruction set the process runs on (cpu/isa.hpp). The loop is written once,
// as a lambda marked GRADSYNC_INLINE_LOOP; on_active_isa inlines it into one function per set, each compiled for
// its set by GCC's target attribute, and calls the one for active_isa(). Code outside these loops stays plain
// x86-64, so no other function can carry an instruction the CPU lacks.
//
// Why a lambda and not a function per set: a function compiled for a set may only inline callees compiled for a
// subset, and a plain lambda (like the plain helpers it calls, e.g. exp_nonpositive) is compiled for the
// baseline, which every set contains; once inlined, its loops are vectorized for the caller's set.
#include <utility>

#include "cpu/isa.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#define GRADSYNC_ISA_DISPATCH 1
// What Isa::avx2 and Isa::avx512 promise (cpu/isa.cpp checks the same features). No arch=: GCC inlines only
// between functions of one architecture, so the sets are named feature by feature.
#define GRADSYNC_AVX2_FEATURES "avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt"
#define GRADSYNC_AVX512_FEATURES \
  GRADSYNC_AVX2_FEATURES, "avx512f,avx512cd,avx512dq,avx512bw,avx512vl,prefer-vector-width=512"
// For a file of kernels written with one set's intrinsics: every function defined between
// GRADSYNC_BEGIN_TARGET(GRADSYNC_AVX2_FEATURES) and GRADSYNC_END_TARGET, lambdas included, is compiled for that
// set. Include every header before it, so that their inline functions stay plain x86-64.
#define GRADSYNC_PRAGMA(text) _Pragma(#text)
#define GRADSYNC_BEGIN_TARGET(features) _Pragma("GCC push_options") GRADSYNC_PRAGMA(GCC target(features))
#define GRADSYNC_END_TARGET _Pragma("GCC pop_options")
#endif

// Marks a loop's lambda: it must be inlined into each set's function to be compiled for that set.
#define GRADSYNC_INLINE_LOOP __attribute__((always_inline))

namespace gradsync {
namespace isa_detail {

template <class Loop>
__attribute__((noinline)) auto on_baseline(const Loop& loop) {
  return loop();
}
#if defined(GRADSYNC_ISA_DISPATCH)
template <class Loop>
__attribute__((noinline, target(GRADSYNC_AVX2_FEATURES))) auto on_avx2(const Loop& loop) {
  return loop();
}
template <class Loop>
__attribute__((noinline, target(GRADSYNC_AVX512_FEATURES))) auto on_avx512(const Loop& loop) {
  return loop();
}
#endif

}  // namespace isa_detail

// loop() compiled for active_isa(); returns what it returns. Any thread may call it.
template <class Loop>
auto on_active_isa(const Loop& loop) {
#if defined(GRADSYNC_ISA_DISPATCH)
  switch (active_isa()) {
    case Isa::avx512: return isa_detail::on_avx512(loop);
    case Isa::avx2: return isa_detail::on_avx2(loop);
    case Isa::baseline: break;
  }
#endif
  return isa_detail::on_baseline(loop);
}

}  // namespace gradsync
