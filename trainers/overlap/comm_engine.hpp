#pragma once
// Moves communication on while a worker computes. Jobs (a bucket's allreduce, a parameter-server push and pull)
// run one after another in the order they were queued: a job's data moves once the one before it completes, which
// is what lets several allreduce objects share one communicator (collectives/allreduce.hpp); only a part on tags of
// its own (the next bucket's agreement check) goes ahead while the job before it is in flight. Progress comes from
// one of two places:
//   calls   the worker calls poll() between kernels (PassObserver::between_kernels) and wait_all() at the end;
//           every MPI call stays on the worker's thread
//   thread  a communication thread polls the queue, sleeping briefly between polls so that it does not take a core
//           from the compute; the worker's thread makes no MPI call while a job is queued. Needs MPI initialized
//           with at least MPI_THREAD_SERIALIZED.
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainers/config/progress.hpp"

namespace gradsync {

// One nonblocking operation. start() posts it, test() moves it on without blocking and says whether it is done,
// wait() blocks until it is. Called only by the engine, on one thread at a time.
// A job may have a part that needs neither its data nor the job queued before it (an allreduce's agreement check, on
// tags of its own): the engine calls start_ahead() once the job is next in line (the head, while the head may not
// start yet, or the job after a head in flight) and test_ahead() at each poll after, and start() when the job's
// turn comes, which then does the rest. By default there is no such part.
class CommJob {
 public:
  virtual ~CommJob() = default;
  virtual void start() = 0;
  virtual bool test() = 0;
  virtual void wait() = 0;
  virtual void start_ahead() {}
  virtual void test_ahead() {}
};

class CommEngine {
 public:
  // `max_jobs`: most jobs queued at once (the queue is allocated here, once). Thread mode throws std::runtime_error
  // when MPI provides less than MPI_THREAD_SERIALIZED.
  CommEngine(Progress mode, std::size_t max_jobs);
  ~CommEngine();
  CommEngine(const CommEngine&) = delete;
  CommEngine& operator=(const CommEngine&) = delete;

  Progress mode() const { return mode_; }
  // Queues `job`, which must stay alive and leave its buffers to the engine until wait_all() returns. More than
  // max_jobs queued at once throws std::logic_error.
  void enqueue(CommJob& job);
  // Queues `job` as enqueue() does but not ready: it may not start, only its part ahead may run (a bucket announced
  // at the start of a pass, whose gradient is not computed yet). ready() makes the first announced job that is not
  // ready yet ready (jobs become ready in queue order; std::logic_error if there is none). wait_all() with a job
  // not ready is a std::logic_error.
  void announce(CommJob& job);
  void ready();
  // Calls mode: starts and moves on the queued jobs without blocking. Thread mode: nothing (the thread does it).
  void poll();
  // Blocks until every queued job has completed (the worker's only wait). Returns the seconds spent blocked. A job
  // that failed (MpiError, MismatchError) throws here, in either mode.
  double wait_all();
  // Seconds during which a job was in flight (from its start to when it was seen complete), since the last call.
  double take_busy_seconds();

 private:
  // Moves the head of the queue on; true when the queue is empty. `blocking` waits for each job instead.
  bool advance(bool blocking);
  // Moves the part ahead of the job next in line on (CommJob::start_ahead).
  void look_ahead();
  void thread_main();

  Progress mode_;
  std::vector<CommJob*> jobs_;  // fixed capacity: a ring of max_jobs slots
  std::vector<char> ahead_;     // per slot: its job's part ahead was started
  std::size_t head_ = 0, count_ = 0;
  std::size_t ready_ = 0;  // the first ready_ queued jobs may start
  bool head_started_ = false;
  double head_started_at_ = 0;
  double busy_s_ = 0;
  // Thread mode.
  std::mutex mutex_;
  std::condition_variable work_, idle_;
  bool stop_ = false;
  std::exception_ptr error_;  // a job's failure on the thread, rethrown by wait_all()
  std::thread thread_;
};

}  // namespace gradsync
