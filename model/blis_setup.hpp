#pragma once
// BLIS kernel selection. Debian's BLIS 0.9 falls back to its slow `generic` reference kernels on x86-64 CPUs it
// does not recognize (e.g. AMD family 0x1A), running sgemm ~3-4x slower than its zen/haswell kernels would on
// the same CPU. configure_blis() detects that case and selects the best kernel set the installed BLIS has.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gradsync {

struct BlisConfig {
  std::string arch;    // the kernel set BLIS runs with, e.g. "zen3"
  std::string reason;  // why: "detected by BLIS", "BLIS_ARCH_TYPE set by the user", "BLIS chose generic; ..."
  int threads = 1;
  std::string summary() const;  // one line for run headers
};

struct CpuFeatures {
  bool x86_64 = false;
  bool amd = false;
  bool avx2 = false;
  bool fma = false;
};

CpuFeatures host_cpu_features();

// The decision, separated from the probing so it can be tested on any CPU: given BLIS's own choice and the
// kernel sets this BLIS build can run, the kernel set to use instead, or nothing to keep BLIS's choice.
// Candidates are looked up by name because BLIS's architecture indices differ between versions and builds.
std::optional<std::string> better_kernel_set(std::string_view detected, const CpuFeatures& cpu,
                                             std::span<const std::string> runnable);

// Must run before any other BLIS call in the process and before MPI_Init: it probes BLIS in forked children,
// because BLIS fixes its kernel choice, reading BLIS_ARCH_TYPE, once at initialization. A BLIS_ARCH_TYPE
// already set by the user is respected. `threads` is BLIS's thread count for this process (>= 1).
BlisConfig configure_blis(int threads);

}  // namespace gradsync
