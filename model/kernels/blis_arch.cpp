#include "model/kernels/blis_arch.hpp"

#include <blis.h>

#include <array>

namespace gradsync {
namespace {

// Kernel sets to try on an unrecognized AVX2+FMA CPU, best first. On AMD the zen kernels are tuned for its
// cache sizes; haswell's 6x16 microkernel is the safe AVX2+FMA choice everywhere.
constexpr std::array<std::string_view, 4> kAmdPreference = {"zen3", "zen2", "zen", "haswell"};
constexpr std::array<std::string_view, 4> kOtherPreference = {"haswell", "zen3", "zen2", "zen"};

}  // namespace

CpuFeatures host_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.x86_64 = true;
  f.amd = __builtin_cpu_is("amd");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
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
  if (detected != "generic" || !cpu.x86_64 || !cpu.avx2 || !cpu.fma) return std::nullopt;
  for (std::string_view want : cpu.amd ? kAmdPreference : kOtherPreference)
    for (const std::string& have : runnable)
      if (have == want) return have;
  return std::nullopt;
}

std::vector<std::string> candidate_kernel_sets(const CpuFeatures& cpu) {
  std::vector<std::string> sets;
  if (!cpu.x86_64) return sets;
  if (cpu.avx512) sets.emplace_back("skx");
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
