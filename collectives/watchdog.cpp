#include "collectives/watchdog.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace gradsync {
namespace {

constexpr std::int64_t kIdle = -1;

// What this process is waiting for right now. Relaxed atomics: the watchdog needs a recent value, not an
// ordered one, and a torn read across fields can at worst misreport a step in a message that aborts anyway.
std::atomic<const char*> g_what{nullptr};
std::atomic<std::int64_t> g_step{-1};
std::atomic<std::int64_t> g_training_step{-1};
std::atomic<int> g_peer{-1};
std::atomic<std::int64_t> g_since_ns{kIdle};
std::atomic<std::int64_t> g_timeout_ns{0};
std::atomic<bool> g_started{false};
std::atomic<int> g_rank{0};
std::atomic<const char*> g_collective{nullptr};
std::atomic<std::uint32_t> g_collective_object{0};
std::atomic<std::uint64_t> g_collective_seq{0};
std::atomic<bool> g_roll_call_due{false};
std::atomic<bool> g_roll_call_asked{false};  // for the current collective: asked once
std::mutex g_roll_call_mutex;
std::string g_roll_call_result;  // guarded by g_roll_call_mutex

// The collective part of the hang report, if the stalled wait is inside one.
void report_collective(int rank) {
  const char* collective = g_collective.load(std::memory_order_relaxed);
  if (!collective) return;
  std::string roll_call;
  {
    const std::lock_guard lock(g_roll_call_mutex);
    roll_call = g_roll_call_result.empty() ? "no roll call was taken" : g_roll_call_result;
  }
  std::fprintf(stderr, "gradsync watchdog (rank %d): the wait is in collective %s (object %u), call #%llu; %s\n", rank,
               collective, g_collective_object.load(std::memory_order_relaxed),
               static_cast<unsigned long long>(g_collective_seq.load(std::memory_order_relaxed)), roll_call.c_str());
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[maybe_unused]] void watch() {  // unused in a simulation build
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::int64_t timeout = g_timeout_ns.load(std::memory_order_relaxed);
    const std::int64_t since = g_since_ns.load(std::memory_order_relaxed);
    if (timeout <= 0 || since == kIdle) continue;
    const std::int64_t waited = now_ns() - since;
    if (waited >= timeout / 2 && g_collective.load(std::memory_order_relaxed) &&
        !g_roll_call_asked.exchange(true, std::memory_order_relaxed))
      g_roll_call_due.store(true, std::memory_order_relaxed);
    if (waited < timeout) continue;
    const char* what = g_what.load(std::memory_order_relaxed);
    std::int64_t step = g_step.load(std::memory_order_relaxed);
    if (step < 0) step = g_training_step.load(std::memory_order_relaxed);
    const int peer = g_peer.load(std::memory_order_relaxed);
    char peer_text[32] = "the other ranks";
    if (peer >= 0) std::snprintf(peer_text, sizeof peer_text, "rank %d", peer);
    std::fprintf(stderr,
                 "gradsync watchdog (rank %d): waited %.1f s in %s at step %lld for %s; aborting the job "
                 "(--timeout %.0f s)\n",
                 g_rank.load(std::memory_order_relaxed), static_cast<double>(waited) * 1e-9, what ? what : "?",
                 static_cast<long long>(step), peer_text, static_cast<double>(timeout) * 1e-9);
    report_collective(g_rank.load(std::memory_order_relaxed));
    std::fflush(stderr);
    _exit(kWatchdogExitCode);  // mpirun sees a rank die and ends the others
  }
}

}  // namespace

void start_watchdog(double timeout_s, int rank) {
#ifdef GRADSYNC_SIMULATED
  // Under SMPI a wait lasts as long in real time as the simulation of every other rank takes, so a wall-clock
  // timeout would end healthy runs; SimGrid itself ends a simulation whose ranks all wait ("deadlock").
  (void)timeout_s;
  (void)rank;
#else
  g_rank.store(rank, std::memory_order_relaxed);
  g_timeout_ns.store(timeout_s > 0 ? static_cast<std::int64_t>(timeout_s * 1e9) : 0, std::memory_order_relaxed);
  if (!g_started.exchange(true)) std::thread(watch).detach();
#endif
}

void set_watchdog_step(std::int64_t step) { g_training_step.store(step, std::memory_order_relaxed); }

bool watchdog_armed() {
  return g_timeout_ns.load(std::memory_order_relaxed) > 0 && g_started.load(std::memory_order_relaxed);
}

CollectiveScope::CollectiveScope(const char* name, std::uint32_t object, std::uint64_t seq) {
  g_collective_object.store(object, std::memory_order_relaxed);
  g_collective_seq.store(seq, std::memory_order_relaxed);
  g_roll_call_asked.store(false, std::memory_order_relaxed);
  g_collective.store(name, std::memory_order_relaxed);
}

CollectiveScope::~CollectiveScope() {
  g_collective.store(nullptr, std::memory_order_relaxed);
  g_roll_call_due.store(false, std::memory_order_relaxed);
  if (!g_roll_call_asked.load(std::memory_order_relaxed)) return;  // the common case: no lock
  const std::lock_guard lock(g_roll_call_mutex);
  g_roll_call_result.clear();
}

bool watchdog_wants_roll_call() {
  return g_roll_call_due.load(std::memory_order_relaxed) && g_roll_call_due.exchange(false, std::memory_order_relaxed);
}

void set_roll_call_result(const std::string& text) {
  const std::lock_guard lock(g_roll_call_mutex);
  g_roll_call_result = text;
}

WaitScope::WaitScope(const char* what, std::int64_t step, int peer)
    : saved_what_(g_what.load(std::memory_order_relaxed)), saved_step_(g_step.load(std::memory_order_relaxed)),
      saved_since_(g_since_ns.load(std::memory_order_relaxed)), saved_peer_(g_peer.load(std::memory_order_relaxed)) {
  g_what.store(what, std::memory_order_relaxed);
  g_step.store(step, std::memory_order_relaxed);
  g_peer.store(peer, std::memory_order_relaxed);
  g_since_ns.store(now_ns(), std::memory_order_relaxed);
}

WaitScope::~WaitScope() {
  g_what.store(saved_what_, std::memory_order_relaxed);
  g_step.store(saved_step_, std::memory_order_relaxed);
  g_peer.store(saved_peer_, std::memory_order_relaxed);
  // An outer wait resumes with a fresh clock: it was not stuck while the inner one made progress.
  g_since_ns.store(saved_since_ == kIdle ? kIdle : now_ns(), std::memory_order_relaxed);
}

}  // namespace gradsync
