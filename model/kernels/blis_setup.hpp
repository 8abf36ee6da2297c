#pragma once
// BLIS kernel selection. Debian's BLIS 0.9 falls back to its slow `generic` reference kernels on x86-64 CPUs it
// does not recognize (e.g. AMD family 0x1A), running sgemm several times slower than its zen/haswell kernels would
// on the same CPU (docs/compute.md). configure_blis() detects that case and selects the best kernel set the
// installed BLIS has.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

struct BlisConfig {
  std::string arch;    // the kernel set BLIS runs with by default, e.g. "zen3"
  std::string reason;  // why: "detected by BLIS", "BLIS_ARCH_TYPE set by the user", "BLIS chose generic; ..."
  int threads = 1;
  bool user_arch = false;                // BLIS_ARCH_TYPE was set by the user: no kernel set is chosen for them
  std::vector<std::string> kernel_sets;  // sets this BLIS has and this CPU runs (probed), candidates for a plan
  // For run headers: one line, and a second naming each GEMM shape's kernels once a kernel plan is installed
  // (model/kernel_plan.hpp).
  std::string summary() const;
};

struct CpuFeatures {
  bool x86_64 = false;
  bool amd = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;  // F, CD, DQ, BW and VL: what BLIS's skx kernels use
};

CpuFeatures host_cpu_features();

// The decision, separated from the probing so it can be tested on any CPU: given BLIS's own choice and the
// kernel sets this BLIS build can run, the kernel set to use instead, or nothing to keep BLIS's choice.
// Candidates are looked up by name because BLIS's architecture indices differ between versions and builds.
std::optional<std::string> better_kernel_set(std::string_view detected, const CpuFeatures& cpu,
                                             std::span<const std::string> runnable);

// The kernel sets worth timing on a CPU with these features, best-known first: skx needs AVX-512 (F, CD, DQ, BW,
// VL), the others AVX2 and FMA. Only names; whether this BLIS has them and they run is probed.
std::vector<std::string> candidate_kernel_sets(const CpuFeatures& cpu);

// The value BLIS_ARCH_TYPE must hold for BLIS to run kernel set `user` (what a user wrote in BLIS_ARCH_TYPE): a
// number is kept as it is, a set's name (e.g. "zen3") becomes that set's index in this BLIS, anything else is
// nothing. Debian's BLIS 0.9 reads the variable with atoi, so a name it is given silently selects set 0 (skx).
std::optional<std::string> blis_arch_env_value(std::string_view user);

// Must run before any other BLIS call in the process and before MPI_Init: it probes BLIS in forked children,
// because BLIS fixes its kernel choice, reading BLIS_ARCH_TYPE, once at initialization, and a set this CPU
// cannot run kills the process that tries it. A BLIS_ARCH_TYPE already set by the user is respected (and then
// no other set is probed); a set's name there is turned into its index, and a value that is neither a number nor
// a set of this BLIS throws std::invalid_argument. `threads` is BLIS's thread count for this process (>= 1).
BlisConfig configure_blis(int threads);
// What the last configure_blis call of this process returned (a default BlisConfig before any).
const BlisConfig& configured_blis();

}  // namespace gradsync
