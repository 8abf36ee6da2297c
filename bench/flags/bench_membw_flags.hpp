#pragma once
// bench_membw's flags (bench/bench_membw.cpp).
#include <optional>
#include <string>

namespace gradsync::bench {

struct MembwFlags {
  std::string bytes = "256M";
  int reps = 7;
};

// Parses bench_membw's command line into `f`. Every rank calls it alike; `lead` prints --help or the error. Returns
// std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_membw_flags(int argc, char** argv, bool lead, MembwFlags& f);

}  // namespace gradsync::bench
