#include "cpu/isa.hpp"

#include <fmt/format.h>

#include <cstdio>

#include <array>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cpu/native_check.hpp"

namespace gradsync {
namespace {

constexpr std::array<std::string_view, 3> kNames = {"baseline", "avx2", "avx512"};

Isa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // The x86-64 microarchitecture levels: v3 is AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE; v4 adds AVX-512 F, CD, DQ,
  // BW and VL. GCC counts a feature only where the OS saves its registers.
  if (__builtin_cpu_supports("x86-64-v4")) return Isa::avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return Isa::avx2;
#endif
  return Isa::baseline;
}

Isa requested() {
  const Isa cpu = cpu_isa();
  const char* value = std::getenv(std::string(kIsaVariable).c_str());
  if (!value || !*value) return cpu;
  const auto isa = isa_from_name(value);
  if (!isa)
    throw std::invalid_argument(
        fmt::format("{}={}: not an instruction set (baseline, avx2, avx512)", kIsaVariable, value));
  if (*isa > cpu)
    throw std::invalid_argument(fmt::format("{}={}: this CPU runs at most {}", kIsaVariable, value, isa_name(cpu)));
  return *isa;
}

// -1 until decided; then the Isa. Atomic: dispatching threads (the communication thread, BLIS's) read it.
std::atomic<int> g_active{-1};

}  // namespace

std::string_view isa_name(Isa isa) { return kNames[static_cast<std::size_t>(isa)]; }

std::optional<Isa> isa_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<Isa>(i);
  return std::nullopt;
}

Isa cpu_isa() {
  static const Isa isa = (native_build_checked(), detect());
  return isa;
}

Isa active_isa() {
  int value = g_active.load(std::memory_order_relaxed);
  if (value < 0) {
    value = static_cast<int>(requested());
    g_active.store(value, std::memory_order_relaxed);
  }
  return static_cast<Isa>(value);
}

void refuse_bad_isa_request(std::string_view program, bool print) {
  try {
    active_isa();
  } catch (const std::invalid_argument& e) {
    if (print) fmt::print(stderr, "{}: error: {}\n", program, e.what());
    std::exit(2);
  }
}

ScopedIsa::ScopedIsa(Isa isa) : previous_(active_isa()) {
  if (isa > cpu_isa())
    throw std::invalid_argument(
        fmt::format("ScopedIsa: {} on a CPU that runs at most {}", isa_name(isa), isa_name(cpu_isa())));
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
}

ScopedIsa::~ScopedIsa() { g_active.store(static_cast<int>(previous_), std::memory_order_relaxed); }

}  // namespace gradsync
