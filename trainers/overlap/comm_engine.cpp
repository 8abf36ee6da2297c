#include "trainers/overlap/comm_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "collectives/mpi_session.hpp"
#include "collectives/watchdog.hpp"
#include "trace/scope.hpp"
#include "trainers/core/clock.hpp"

namespace gradsync {
namespace {

// How long the communication thread sleeps between polls: short against a message's time on a network link, long
// enough that a polling thread leaves its core to the compute.
constexpr auto kThreadPollInterval = std::chrono::microseconds(50);

}  // namespace

CommEngine::CommEngine(Progress mode, std::size_t max_jobs)
    : mode_(mode), jobs_(std::max<std::size_t>(1, max_jobs)), ahead_(jobs_.size(), 0) {
  if (mode_ != Progress::thread) return;
  if (mpi_thread_level() < MPI_THREAD_SERIALIZED)
    throw std::runtime_error(
        "--progress thread needs MPI initialized with MPI_THREAD_SERIALIZED or more; this MPI provides less");
  thread_ = std::thread(&CommEngine::thread_main, this);
}

CommEngine::~CommEngine() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void CommEngine::enqueue(CommJob& job) {
  announce(job);
  ready();
}

void CommEngine::announce(CommJob& job) {
  {
    const std::lock_guard lock(mutex_);
    if (count_ == jobs_.size())
      throw std::logic_error(fmt::format("CommEngine: more than {} jobs queued at once", jobs_.size()));
    const std::size_t slot = (head_ + count_) % jobs_.size();
    jobs_[slot] = &job;
    ahead_[slot] = 0;
    ++count_;
  }
  if (mode_ == Progress::thread) work_.notify_one();
}

void CommEngine::ready() {
  {
    const std::lock_guard lock(mutex_);
    if (ready_ == count_) throw std::logic_error("CommEngine: ready() with no job announced and not ready");
    ++ready_;
  }
  if (mode_ == Progress::thread) work_.notify_one();
}

void CommEngine::poll() {
  if (mode_ == Progress::calls) advance(false);
}

double CommEngine::wait_all() {
  {
    const std::lock_guard lock(mutex_);
    if (ready_ < count_) throw std::logic_error("CommEngine: wait_all() with a job that is not ready");
  }
  const TraceScope traced(SpanKind::wait, "wait (communication in flight)");
  const double t0 = now_s();
  if (mode_ == Progress::calls) {
    advance(true);
  } else {
    const WaitScope wait("the communication thread finishing this step's jobs");
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return count_ == 0 || error_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  return now_s() - t0;
}

double CommEngine::take_busy_seconds() {
  const std::lock_guard lock(mutex_);
  const double busy = busy_s_;
  busy_s_ = 0;
  return busy;
}

// The jobs run on one thread at a time: the worker's in calls mode, the engine's in thread mode. The lock guards
// only the queue's bookkeeping, never an MPI call, so enqueue() does not wait for a poll.
bool CommEngine::advance(bool blocking) {
  for (;;) {
    CommJob* job = nullptr;
    bool started = false;
    {
      const std::lock_guard lock(mutex_);
      if (count_ == 0) return true;
      job = ready_ == 0 ? nullptr : jobs_[head_];
      started = head_started_;
    }
    if (!job) {  // the head may not start yet: only its part ahead moves
      look_ahead();
      return false;
    }
    if (!started) {
      job->start();
      const std::lock_guard lock(mutex_);
      head_started_ = true;
      head_started_at_ = now_s();
    }
    if (blocking) {
      job->wait();
    } else if (!job->test()) {
      look_ahead();
      return false;
    }
    const std::lock_guard lock(mutex_);
    busy_s_ += now_s() - head_started_at_;
    head_started_ = false;
    head_ = (head_ + 1) % jobs_.size();
    --count_;
    --ready_;
  }
}

void CommEngine::look_ahead() {
  CommJob* next = nullptr;
  std::size_t slot = 0;
  bool started = false;
  {
    const std::lock_guard lock(mutex_);
    const std::size_t offset = ready_ == 0 ? 0 : 1;  // the head while it may not start, else the job after it
    if (offset >= count_) return;
    slot = (head_ + offset) % jobs_.size();
    next = jobs_[slot];
    started = ahead_[slot] != 0;
  }
  if (started) {
    next->test_ahead();
    return;
  }
  next->start_ahead();
  const std::lock_guard lock(mutex_);
  ahead_[slot] = 1;
}

void CommEngine::thread_main() {
  set_trace_slot(1);  // this thread's spans go to a ring of their own
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return stop_ || count_ > 0; });
      if (stop_) return;
    }
    try {
      while (!advance(false)) std::this_thread::sleep_for(kThreadPollInterval);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      count_ = ready_ = 0;  // fatal for the run (the caller ends the job): nothing queued is moved on again
      head_started_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace gradsync
