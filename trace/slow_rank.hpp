#pragma once
// The slow-rank report: from when every rank entered each collective (on rank 0's clock), how often each rank was
// the last one in, and by how much. A rank is named only when it was last into at least kSlowRankLastShare of the
// collectives and late by at least kSlowRankMinLateness_s at the median, so a run whose lateness is noise names
// nobody. Lateness of the last rank in a collective: its entry minus the next-latest rank's, the time the collective
// waited for it alone.
#include <optional>
#include <string>
#include <vector>

#include "trace/gathered_trace.hpp"

namespace gradsync {

inline constexpr double kSlowRankLastShare = 0.75;
inline constexpr double kSlowRankMinLateness_s = 1e-3;

struct SlowRankReport {
  struct Rank {
    int rank = 0;
    std::size_t last = 0;          // collectives this rank was last into
    double median_lateness_s = 0;  // over those
  };
  std::size_t collectives = 0;  // collectives every participating rank's entry is known for
  std::vector<Rank> ranks;      // the ranks that took part in collectives (workers)
  int named = -1;               // the consistently late rank, or -1
};

// From `trace`'s collective entries (ranks without any take no part).
SlowRankReport find_slow_rank(const GatheredTrace& trace);
// Lines for the end of a run: one per rank, then the verdict ("rank 3 was last into 91% of allreduces, 4.8 ms late
// at the median", or that no rank was consistently late, with the thresholds).
std::string format_slow_rank_report(const SlowRankReport& report);
// The verdict line alone (the last line of format_slow_rank_report): what every run prints by default.
std::string format_slow_rank_verdict(const SlowRankReport& report);

// The same report at a watchdog timeout, from what the ranks of the hung collective's communicator could still send
// (collectives/roll_call.hpp): heard[r] holds rank r's recent entries on rank 0's clock, or nothing if r never
// answered. Lateness is among the ranks with entries only; the first line names the ranks it has no data for.
std::string format_hang_lateness(const std::vector<std::optional<std::vector<CollectiveEntry>>>& heard);

}  // namespace gradsync
