#pragma once
// soak's flags (bench/soak.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include "collectives/methods.hpp"

namespace gradsync::bench {

// Every method that sums exactly (methods.hpp); the soak checks exact sums of every type.
inline bool exact(const AllreduceMethod& m) { return m.exact && !m.float32_only; }

struct SoakFlags {
  std::uint64_t calls = 10000, seed = 1, progress_every = 1000;
  std::size_t max_count = std::size_t{1} << 20;
  std::string methods = allreduce_method_names(exact, ",");
  bool trace = false;
};

// Parses soak's command line into `f`. Every rank calls it alike; `lead` prints --help or the error. Returns
// std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_soak_flags(int argc, char** argv, bool lead, SoakFlags& f);

}  // namespace gradsync::bench
