#include "model/kernels/blis_arch.hpp"

#include <blis.h>

#include <array>

#include "cpu/isa.hpp"

namespace gradsync {
namespace {

// Kernel sets to try on an unrecognized AVX2+FMA CPU, best first. On AMD the zen kernels are tuned for its
// cache sizes; haswell's 6x16 microkernel is the safe AVX2+FMA choice everywhere.
constexpr std::array<std::string_view, 4> kAmdPreference = {"zen3", "zen2", "zen", "haswell"};
constexpr std::array<std::string_view, 4> kOtherPreference = {"haswell", "zen3", "zen2", "zen"};

}  // namespace

bool needs_avx512(std::string_view kernel_set) {
  return kernel_set == "skx" || kernel_set == "knl" || kernel_set == "zen4";
}

CpuFeatures host_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.x86_64 = true;
  f.amd = __builtin_cpu_is("amd");
  // What the process may use, not only what the CPU has: GRADSYNC_ISA=avx2 hides AVX-512 from BLIS's kernel
  // choice as from gradsync's own loops.
  const Isa isa = active_isa();
  f.avx2 = __builtin_cpu_supports("avx2") && isa >= Isa::avx2;
  f.fma = __builtin_cpu_supports("fma") && isa >= Isa::avx2;
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && isa >= Isa::avx512;
#endif
  return f;
}

std::optional<int> blis_arch_index(std::string_view name) {
  for (int i = 0; i < BLIS_NUM_ARCHS; ++i)
    if (name == bli_arch_string(static_cast<arch_t>(i))) return i;
  return std::nullopt;
}

std::optional<std::string> better_kernel_set(std::string_view detected, const CpuFeatures& cpu,
                                             std::span<const std::string> runnable) {
  const bool hidden_avx512 = needs_avx512(detected) && !cpu.avx512;
  if ((detected != "generic" && !hidden_avx512) || !cpu.x86_64 || !cpu.avx2 || !cpu.fma) return std::nullopt;
  for (std::string_view want : cpu.amd ? kAmdPreference : kOtherPreference)
    for (const std::string& have : runnable)
      if (have == want) return have;
  return std::nullopt;
}

std::vector<std::string> candidate_kernel_sets(const CpuFeatures& cpu) {
  std::vector<std::string> sets;
  if (!cpu.x86_64) return sets;
  if (cpu.avx512) sets.emplace_back("skx");  // the one AVX-512 set Debian's BLIS 0.9 has for these CPUs
  if (cpu.avx2 && cpu.fma)
    for (std::string_view name : cpu.amd ? kAmdPreference : kOtherPreference) sets.emplace_back(name);
  return sets;
}

std::optional<std::string> blis_arch_env_value(std::string_view user) {
  if (!user.empty() && user.find_first_not_of("0123456789") == std::string_view::npos) return std::string(user);
  if (const auto index = blis_arch_index(user)) return std::to_string(*index);
  return std::nullopt;
}

}  // namespace gradsync
