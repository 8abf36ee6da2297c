#pragma once
// A guard against the classic MPI failure: one rank stops and every other rank waits forever. Code that is
// about to wait on other ranks opens a WaitScope saying what it waits for; a background thread ends the
// process (and so, through mpirun, the job) if one wait lasts longer than the timeout, after printing which
// call, which step and which peer it was stuck on. The thread never calls MPI, so MPI_THREAD_SINGLE is fine.
#include <atomic>
#include <cstdint>
#include <string>

namespace gradsync {

inline constexpr int kWatchdogExitCode = 3;

// Starts the watchdog thread of this process (once; later calls change the timeout and the rank it reports).
// `rank` is used in the message. timeout_s <= 0 disables it. The thread is detached and lives until the process
// ends. A simulation build (cmake/smpi_compat.h) starts none: SimGrid reports ranks that wait forever itself. WaitScopes
// may be opened from one thread only (the one that calls MPI).
void start_watchdog(double timeout_s, int rank);

// Marks a wait. Nestable: an inner scope reports itself and restores the outer one when it closes. `what`
// must be a string literal (it is read by the watchdog thread after the scope may have been left).
// Cost: two clock reads and a few relaxed atomic stores.
class WaitScope {
 public:
  WaitScope(const char* what, std::int64_t step = -1, int peer = -1);
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  const char* saved_what_;
  std::int64_t saved_step_, saved_since_;
  int saved_peer_;
};

// The current training step, reported by the watchdog when a wait does not name its own.
void set_watchdog_step(std::int64_t step);

// Whether a watchdog is running in this process (a timeout is set). One relaxed load.
bool watchdog_armed();

// Marks the collective the waits opened inside it belong to, for the hang report: `name` (a string that lives as long
// as the process), the object's number and the call's, the same on every rank (Allreduce::object_id). Not nestable.
class CollectiveScope {
 public:
  CollectiveScope(const char* name, std::uint32_t object, std::uint64_t seq);
  ~CollectiveScope();
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;
};

// True once a wait inside a CollectiveScope has lasted half the timeout: the waiting thread should take a roll call
// (collectives/roll_call.hpp) so that the hang report can name the ranks that never entered the collective. Returns
// true once per such wait. One relaxed load when false.
bool watchdog_wants_roll_call();
// The roll call's findings so far (lines of text, no final newline), printed with the hang report. Copied.
void set_roll_call_result(const std::string& text);

}  // namespace gradsync
