#include "trace/recorder.hpp"

#include <algorithm>
#include <chrono>
#ifdef GRADSYNC_SIMULATED
#include <mpi.h>
#endif

namespace gradsync {

std::atomic<TraceRecorder*> g_trace_recorder{nullptr};
std::atomic<TraceRecorder*> g_entry_recorder{nullptr};

namespace {

thread_local int t_slot = 0;

const char* const kKindNames[] = {"forward",   "backward",     "allreduce",  "stage",      "wait",
                                  "push/pull", "server apply", "checkpoint", "evaluation", "step"};

// A ring's contents oldest first.
template <class T>
void append_in_order(const std::vector<T>& ring, std::size_t next, bool wrapped, std::vector<T>& out) {
  if (wrapped) out.insert(out.end(), ring.begin() + static_cast<std::ptrdiff_t>(next), ring.end());
  out.insert(out.end(), ring.begin(), ring.begin() + static_cast<std::ptrdiff_t>(next));
}

}  // namespace

const char* span_kind_name(SpanKind kind) { return kKindNames[static_cast<int>(kind)]; }

// A simulation build (cmake/smpi_compat.h) reads the simulated clock, as the trainer does (trainers/core/clock.hpp): its
// ranks take turns in one process, so the wall clock would time the other ranks' turns too.
double trace_clock_s() {
#ifdef GRADSYNC_SIMULATED
  return MPI_Wtime();
#else
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

const char* trace_clock_name() {
#ifdef GRADSYNC_SIMULATED
  return "the simulated clock";
#else
  return "steady_clock";
#endif
}

void set_trace_slot(int slot) { t_slot = slot; }

void install_trace_recorder(TraceRecorder* recorder) {
  g_entry_recorder = recorder;
  g_trace_recorder = recorder && recorder->records_spans() ? recorder : nullptr;
}

TraceRecorder::TraceRecorder(TraceWindow window, bool spans) : window_(window), spans_(spans) {
  const std::size_t steps = static_cast<std::size_t>(std::clamp<std::int64_t>(window.steps(), 1, TraceWindow::kMaxSteps));
  for (Ring& r : rings_) {
    if (spans_) r.spans.resize(steps * kSpansPerStep);
    r.entries.resize(kCollectiveEntries);
  }
}

bool TraceRecorder::recording() const {
  if (!spans_) return false;
  if (window_.first < 0) return true;
  const std::int64_t s = step();
  return s >= window_.first && s <= window_.last;
}

void TraceRecorder::add(Span span) {
  if (!recording()) return;
  span.step = step();
  Ring& r = rings_[t_slot];
  r.spans[r.next] = span;
  if (++r.next == r.spans.size()) r.next = 0, r.wrapped = true;
}

void TraceRecorder::enter(std::uint32_t object, std::uint64_t seq) {
  Ring& r = rings_[t_slot];
  r.entries[r.next_entry] = {trace_clock_s(), seq, object};
  if (++r.next_entry == r.entries.size()) r.next_entry = 0, r.entries_wrapped = true;
}

std::vector<Span> TraceRecorder::spans() const {
  std::vector<Span> all;
  std::int64_t oldest_complete = -1, newest = -1;
  for (const Ring& r : rings_) {
    const std::size_t before = all.size();
    append_in_order(r.spans, r.next, r.wrapped, all);
    if (all.size() == before) continue;
    newest = std::max(newest, all.back().step);
    if (r.wrapped) oldest_complete = std::max(oldest_complete, all[before].step + 1);  // its first step lost spans
  }
  std::int64_t from = oldest_complete;
  if (window_.first < 0) from = std::max(from, newest - window_.last_steps + 1);
  std::erase_if(all, [&](const Span& s) { return s.step < from; });
  std::stable_sort(all.begin(), all.end(), [](const Span& a, const Span& b) { return a.start_s < b.start_s; });
  return all;
}

std::vector<CollectiveEntry> TraceRecorder::entries() const {
  std::vector<CollectiveEntry> all;
  for (const Ring& r : rings_) append_in_order(r.entries, r.next_entry, r.entries_wrapped, all);
  return all;
}

std::vector<CollectiveEntry> TraceRecorder::recent_entries(std::size_t n) const {
  const Ring& r = rings_[t_slot];
  const std::size_t kept = r.entries_wrapped ? r.entries.size() : r.next_entry;
  n = std::min(n, kept);
  std::vector<CollectiveEntry> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {  // the n before next_entry, wrapping backwards
    const std::size_t at = (r.next_entry + r.entries.size() - n + i) % r.entries.size();
    out.push_back(r.entries[at]);
    out.back().at_s -= clock_offset_s_;
  }
  return out;
}

}  // namespace gradsync
