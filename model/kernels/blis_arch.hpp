#pragma once
// BLIS's kernel sets by name, and which of them suit a CPU: the decisions behind configure_blis
// (model/kernels/blis_setup.hpp), kept apart from its probing so that they can be tested on any CPU.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

struct CpuFeatures {
  bool x86_64 = false;
  bool amd = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;  // F, CD, DQ, BW and VL: what BLIS's skx kernels use
};

// This CPU's features as far as the process may use them (cpu/isa.hpp: GRADSYNC_ISA can hide AVX-512 or AVX2).
CpuFeatures host_cpu_features();

// True if BLIS's kernel set `kernel_set` needs AVX-512 (skx, knl, zen4).
bool needs_avx512(std::string_view kernel_set);

// The index of kernel set `name` (e.g. "zen3") in this BLIS build, or nothing if it has no such set. Sets are
// looked up by name because BLIS's architecture indices differ between versions and builds.
std::optional<int> blis_arch_index(std::string_view name);

// Given BLIS's own choice and the kernel sets this BLIS build can run, the kernel set to use instead, or nothing
// to keep BLIS's choice: Debian's BLIS 0.9 falls back to its slow `generic` reference kernels on x86-64 CPUs it
// does not recognize (e.g. AMD family 0x1A), running sgemm several times slower than its zen/haswell kernels would
// on the same CPU (docs/compute.md); and BLIS picks an AVX-512 set on an AVX-512 CPU even where `cpu` hides
// AVX-512 (GRADSYNC_ISA=avx2). Either way the best AVX2 + FMA set of `runnable` replaces it.
std::optional<std::string> better_kernel_set(std::string_view detected, const CpuFeatures& cpu,
                                             std::span<const std::string> runnable);

// The kernel sets worth timing on a CPU with these features, best-known first: skx needs AVX-512 (F, CD, DQ, BW,
// VL), the others AVX2 and FMA. Only names; whether this BLIS has them and they run is probed.
std::vector<std::string> candidate_kernel_sets(const CpuFeatures& cpu);

// The value BLIS_ARCH_TYPE must hold for BLIS to run kernel set `user` (what a user wrote in BLIS_ARCH_TYPE): a
// number is kept as it is, a set's name (e.g. "zen3") becomes that set's index in this BLIS, anything else is
// nothing. Debian's BLIS 0.9 reads the variable with atoi, so a name it is given silently selects set 0 (skx).
std::optional<std::string> blis_arch_env_value(std::string_view user);

}  // namespace gradsync
