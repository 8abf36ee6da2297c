#pragma once
// Which instruction set the hot loops run on. One build runs on every x86-64 CPU: the loops that decide a step's
// speed (reductions, bfloat16, the byte kernels, softmax and ReLU) are compiled once per instruction set and
// chosen at run time (cpu/isa_dispatch.hpp); everything else is plain x86-64.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gradsync {

// Ordered: each set includes the ones before it. avx2 means AVX2 with FMA, F16C, BMI2; avx512 means F, CD, DQ,
// BW and VL (what the AVX-512 loops and BLIS's skx kernels use).
enum class Isa : std::uint8_t { baseline, avx2, avx512 };

inline constexpr std::string_view kIsaVariable = "GRADSYNC_ISA";

std::string_view isa_name(Isa isa);
// The set named `name` ("baseline", "avx2", "avx512"), or nothing.
std::optional<Isa> isa_from_name(std::string_view name);

// The best set this CPU runs (baseline on a CPU that is not x86-64).
Isa cpu_isa();

// The set the hot loops run on: cpu_isa(), or less where GRADSYNC_ISA asks for less. Decided on the first call
// and fixed for the process (a test may override it: ScopedIsa). Throws std::invalid_argument, naming the
// variable, its value and what this CPU runs, if GRADSYNC_ISA is not a set's name or asks for more than the CPU
// runs; binaries call it once at start so that the error comes before any work.
Isa active_isa();

// For a binary's start, before any work: if GRADSYNC_ISA is not a set's name or asks for more than this CPU runs,
// prints "<program>: error: <why>" to stderr (where `print`: rank 0 of a launch) and exits with status 2, the
// usage error's code. Returns otherwise.
void refuse_bad_isa_request(std::string_view program, bool print = true);

// For tests: the hot loops run on `isa` (at most cpu_isa(), else std::invalid_argument) until destroyed. Not
// thread-safe against loops running meanwhile; one at a time.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa);
  ~ScopedIsa();
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa previous_;
};

}  // namespace gradsync
