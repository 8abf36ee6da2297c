#include "trainers/comm_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "collectives/mpi_session.hpp"
#include "collectives/watchdog.hpp"
#include "trace/scope.hpp"
#include "trainers/clock.hpp"

namespace gradsync {
namespace {

// How long the communication thread sleeps between polls: short against a message's time on a network link, long
// enough that a polling thread leaves its core to the compute.
constexpr auto kThreadPollInterval = std::chrono::microseconds(50);

}  // namespace

CommEngine::CommEngine(Progress mode, std::size_t max_jobs) : mode_(mode), jobs_(std::max<std::size_t>(1, max_jobs)) {
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
  {
    const std::lock_guard lock(mutex_);
    if (count_ == jobs_.size())
      throw std::logic_error(fmt::format("CommEngine: more than {} jobs queued at once", jobs_.size()));
    jobs_[(head_ + count_) % jobs_.size()] = &job;
    ++count_;
  }
  if (mode_ == Progress::thread) work_.notify_one();
}

void CommEngine::poll() {
  if (mode_ == Progress::calls) advance(false);
}

double CommEngine::wait_all() {
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
      job = jobs_[head_];
      started = head_started_;
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
    next_started_ahead_ = false;  // the next job is the head now: start() goes on from where start_ahead() left it
    head_ = (head_ + 1) % jobs_.size();
    --count_;
  }
}

void CommEngine::look_ahead() {
  CommJob* next = nullptr;
  bool started = false;
  {
    const std::lock_guard lock(mutex_);
    if (count_ < 2) return;
    next = jobs_[(head_ + 1) % jobs_.size()];
    started = next_started_ahead_;
  }
  if (started) {
    next->test_ahead();
    return;
  }
  next->start_ahead();
  const std::lock_guard lock(mutex_);
  next_started_ahead_ = true;
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
      count_ = 0;  // fatal for the run (the caller ends the job): nothing queued is moved on again
      head_started_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace gradsync
