#pragma once
// bench_aggregate's flags (bench/bench_aggregate.cpp).
#include <optional>
#include <string>

namespace gradsync::bench {

#ifdef GRADSYNC_SIMULATED
// The simulated network charges every call the same time, and the check's call already warms the plan up.
inline constexpr int kAggregateReps = 1, kAggregateWarmup = 0;
#else
inline constexpr int kAggregateReps = 5, kAggregateWarmup = 1;
#endif

struct AggregateFlags {
  std::string aggregators = "mean,median,trimmed,krum,multikrum,bulyan,cclip:1", forms = "segmented,gathered",
              min_bytes = "1M", max_bytes = "64M", csv;
  int byzantine = 1, reps = kAggregateReps, warmup = kAggregateWarmup;
  double step_factor = 4;
  bool no_ring = false, no_check = false;
};

// Parses bench_aggregate's command line into `f`. Every rank calls it alike; `lead` prints --help or the error.
// Returns std::nullopt to go on, or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_aggregate_flags(int argc, char** argv, bool lead, AggregateFlags& f);

}  // namespace gradsync::bench
