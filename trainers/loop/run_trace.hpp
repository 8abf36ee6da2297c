#pragma once
// Tracing for one training run: the recorder installed for the run's length, the ranks' clocks aligned before and
// after, and at the end the records gathered on rank 0, written as a Chrome trace and read for the slow-rank report.
#include <memory>
#include <string>

#include "collectives/comm.hpp"
#include "trace/gathered_trace.hpp"
#include "trainers/config/observe_options.hpp"

namespace gradsync {

// Collective over `world`: an empty string on every rank if rank 0 can create options.trace_file (or none is asked
// for), else the same one-line message on every rank. Run before training, so a bad path fails before any step.
std::string check_trace_file(const ObserveOptions& options, const Comm& world);

class RunTrace {
 public:
  // Collective over `world` when options.recording() (every rank passes the same options), else nothing at all.
  // Installs the process's recorder (trace/recorder.hpp) and measures the clock offsets; must be built before any
  // thread that records starts, and outlive them (it uninstalls the recorder when destroyed).
  RunTrace(const ObserveOptions& options, const Comm& world, bool communication_thread);
  ~RunTrace();
  RunTrace(const RunTrace&) = delete;
  RunTrace& operator=(const RunTrace&) = delete;

  // Collective over `world`, once, after the last step, while the objects whose names the spans point at are alive
  // and no thread records: measures the offsets again, gathers every rank's records on rank 0, which writes the trace
  // file and prints the slow-rank report (the verdict line, or with ObserveOptions::table() the clock alignment and
  // the whole table). Throws std::runtime_error on rank 0 if the file
  // cannot be written (after every rank has taken part).
  void finish();
  // The recorder this run installed, or nullptr when it records nothing.
  TraceRecorder* recorder() const { return recorder_.get(); }

 private:
  ObserveOptions options_;
  const Comm& world_;
  std::unique_ptr<TraceRecorder> recorder_;
  GatheredTrace gathered_;
};

}  // namespace gradsync
