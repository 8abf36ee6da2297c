#pragma once
// Every rank's records on one rank, with the clock offsets that put them on rank 0's clock: what the trace file and
// the slow-rank report are made from.
#include <vector>

#include "trace/rank_records.hpp"
#include "trace/recorder.hpp"

namespace gradsync {

// A rank's clock minus rank 0's, and its error bound: the true offset is within offset_s +- error_s (half the
// shortest round trip of the ping-pongs it was estimated from).
struct ClockOffset {
  double offset_s = 0;
  double error_s = 0;
};

struct GatheredTrace {
  std::vector<RankRecords> ranks;  // indexed by world rank
  std::vector<ClockOffset> start;  // per rank, measured before the run
  std::vector<ClockOffset> end;    // per rank, measured after it: end - start is the drift over the run
  TraceWindow window;
  int communication_thread = 0;  // 1: collectives ran on a communication thread (--progress thread)
  // Rank `rank`'s local time `t` on rank 0's clock.
  double aligned(int rank, double t) const { return t - start[static_cast<std::size_t>(rank)].offset_s; }
};

}  // namespace gradsync
