#pragma once
// The trace recorder: spans (trace/span.hpp) and collective entries copied into rings allocated once, one ring per
// recording thread, so that recording takes no lock, allocates nothing and formats nothing. Code that records tests
// one pointer first (trace_recorder()), so a run without tracing pays a load and a branch per span.
// The recorder knows nothing about MPI: gathering the ranks' records is collectives/trace_gather.hpp's job.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/span.hpp"

namespace gradsync {

// Which steps to keep. By default the last kDefaultLastSteps steps of the run (a ring: older steps are overwritten);
// `first`..`last` (--trace-steps A:B) records only those steps, and none outside them.
struct TraceWindow {
  static constexpr std::int64_t kDefaultLastSteps = 64;
  static constexpr std::int64_t kMaxSteps = 1024;  // a window's span memory: kMaxSteps * kSpansPerStep spans per thread
  std::int64_t first = -1, last = -1;              // first < 0: keep the last `last_steps` steps instead
  std::int64_t last_steps = kDefaultLastSteps;
  std::int64_t steps() const { return first >= 0 ? last - first + 1 : last_steps; }
};

// Room per step and per thread. A step of a small model with buckets has a few dozen spans; a ring allreduce adds
// two per message stage. A step with more spans than this shortens the window the ring holds (stated in the file).
inline constexpr std::size_t kSpansPerStep = 512;
// Collective entries kept per thread for the slow-rank report: the last this many collectives. The report is on in every
// run, so this is what every rank allocates (24 bytes an entry, per recording thread), also each simulated rank of one
// SMPI process.
inline constexpr std::size_t kCollectiveEntries = std::size_t{1} << 14;
// Recording threads: the worker's own thread (slot 0) and an overlap run's communication thread (slot 1).
inline constexpr int kTraceSlots = 2;

// Seconds on the monotonic clock every span is timed with (steady_clock: one clock for all processes of a host; the
// simulated clock in a simulation build).
double trace_clock_s();
// What trace_clock_s() reads, for reports: "steady_clock" or "the simulated clock".
const char* trace_clock_name();

class TraceRecorder {
 public:
  // Allocates every ring now. `window` must have steps() in 1..kMaxSteps (the trainer's validate checks it). Without
  // `spans`, only collective entries are kept (the slow-rank report alone): no span ring is allocated.
  explicit TraceRecorder(TraceWindow window, bool spans = true);
  bool records_spans() const { return spans_; }

  // The worker's thread, at the start of each training step: spans recorded from now on belong to `global_step`.
  void set_step(std::int64_t global_step) { step_.store(global_step, std::memory_order_relaxed); }
  std::int64_t step() const { return step_.load(std::memory_order_relaxed); }
  // Whether spans recorded now are kept (the current step is inside the window).
  bool recording() const;
  // Copies `span`, stamped with the current step, into the calling thread's ring (set_trace_slot), if recording().
  void add(Span span);
  // Records that this rank entered collective (object, seq) now. Kept for every step, in a ring of its own.
  void enter(std::uint32_t object, std::uint64_t seq);
  // This rank's clock minus rank 0's (collectives/trace_gather.hpp measures it), for recent_entries().
  void set_clock_offset(double offset_s) { clock_offset_s_ = offset_s; }
  // The calling thread's last `n` (or fewer) collective entries, oldest first, on rank 0's clock: what a watchdog's
  // roll call sends (collectives/roll_call.hpp). Reads only the caller's own ring, so it is safe while other threads
  // record; call it from a thread that is not recording at the same time, as a thread blocked in a wait is not.
  std::vector<CollectiveEntry> recent_entries(std::size_t n) const;

  // After every recording thread has stopped: the kept spans of every slot, in the window (a wrapped ring's oldest,
  // partial step left out), sorted by start time; and the collective entries.
  std::vector<Span> spans() const;
  std::vector<CollectiveEntry> entries() const;
  const TraceWindow& window() const { return window_; }

 private:
  struct Ring {
    std::vector<Span> spans;
    std::size_t next = 0;
    bool wrapped = false;
    std::vector<CollectiveEntry> entries;
    std::size_t next_entry = 0;
    bool entries_wrapped = false;
  };
  TraceWindow window_;
  bool spans_ = true;
  std::atomic<std::int64_t> step_{-1};
  double clock_offset_s_ = 0;
  Ring rings_[kTraceSlots];
};

// The process's recorder, or nullptr when tracing is off. Installed before any recording thread starts and removed
// after they have all stopped (trainers/loop/run_trace.hpp). Atomic because bench_sync's -traced methods switch it on
// and off between steps while an idle communication thread may read it; a relaxed load is a plain load.
// Only a recorder that keeps spans is installed here: the span sites test this pointer alone.
extern std::atomic<TraceRecorder*> g_trace_recorder;
inline TraceRecorder* trace_recorder() { return g_trace_recorder.load(std::memory_order_relaxed); }
// The recorder collective entries go to (the slow-rank report, a hang's roll call): installed whenever a run records at
// all, spans or not.
extern std::atomic<TraceRecorder*> g_entry_recorder;
inline TraceRecorder* entry_recorder() { return g_entry_recorder.load(std::memory_order_relaxed); }
// Installs `recorder` (nullptr: none) for collective entries, and for spans if it keeps them.
void install_trace_recorder(TraceRecorder* recorder);
// The calling thread records into `slot` (0..kTraceSlots-1; 0 unless a thread says otherwise).
void set_trace_slot(int slot);

}  // namespace gradsync
