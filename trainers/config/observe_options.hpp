#pragma once
// What a run records about itself (--trace, --trace-steps, --slow-ranks, --explain): one field of TrainConfig.
#include <string>

#include "trace/recorder.hpp"

namespace gradsync {

struct ObserveOptions {
  std::string trace_file;   // write a Chrome trace of the window here (empty: none)
  TraceWindow window;       // which steps the trace keeps (default: the last TraceWindow::kDefaultLastSteps)
  bool slow_ranks = false;  // print the slow-rank report at the end (also on with a trace file)
  bool explain = false;     // print auto's explanation table at the end
  bool recording() const { return !trace_file.empty() || slow_ranks; }
};

}  // namespace gradsync
