#pragma once
// What a run records about itself (--trace, --trace-steps, --slow-ranks / --no-slow-ranks, --explain): one field of
// TrainConfig.
#include <string>

#include "trace/recorder.hpp"

namespace gradsync {

// How much of the slow-rank report a run prints at its end (trace/slow_rank.hpp). Recording it costs a clock read and a
// 24-byte copy per collective entry, so it is on unless turned off.
enum class SlowRanks {
  off,      // --no-slow-ranks: no entry times recorded, no report (a hang report then cannot say who was late)
  verdict,  // the default: one line naming the consistently late rank, nothing when there is none
  table,    // --slow-ranks (or --trace): every rank's share and lateness, the clock alignment, then the verdict
};

struct ObserveOptions {
  std::string trace_file;  // write a Chrome trace of the window here (empty: none)
  TraceWindow window;      // which steps the trace keeps (default: the last TraceWindow::kDefaultLastSteps)
  SlowRanks slow_ranks = SlowRanks::verdict;
  bool explain = false;  // print auto's explanation table at the end
  // Whether the run installs a recorder at all: collective entries for the report, spans only with a trace file.
  bool recording() const { return !trace_file.empty() || slow_ranks != SlowRanks::off; }
  bool spans() const { return !trace_file.empty(); }
  bool table() const { return !trace_file.empty() || slow_ranks == SlowRanks::table; }
};

}  // namespace gradsync
