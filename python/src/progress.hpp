#pragma once
// The one thread of this process that makes the gradsync backend's MPI calls (the shape of PyTorch's
// ProcessGroupMPI: a queue of jobs, one worker that owns MPI). Every process group of the backend enqueues here, so
// MPI needs only MPI_THREAD_SERIALIZED and one group's collective never runs beside another's; a collective returns
// to Python as soon as it is queued, and DDP's next bucket is computed while this thread moves the last one.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gradsync::torch_backend {

class Progress {
 public:
  // The process's worker, started on first use.
  static Progress& instance();
  // Runs `job` on the worker after every job queued before it (FIFO: ranks that queue collectives in the same order
  // run them in that order). A job reports its own outcome (it completes its Work); one that throws anyway ends
  // the process with its message, since its peers would wait for it forever. Throws std::logic_error after
  // shutdown().
  void enqueue(std::function<void()> job);
  // enqueue(), then blocks the caller until `job` ran; rethrows what it threw. Not from the worker itself.
  void run_and_wait(const std::function<void()>& job);
  // Runs the jobs still queued, then stops and joins the worker. Idempotent; called before MPI_Finalize.
  void shutdown();

 private:
  Progress();
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread worker_;
};

}  // namespace gradsync::torch_backend
