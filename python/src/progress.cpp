#include "progress.hpp"

#include <cstdio>
#include <exception>
#include <future>
#include <stdexcept>

#include <mpi.h>

namespace gradsync::torch_backend {

Progress& Progress::instance() {
  // Never destroyed: shutdown() joins the thread before MPI_Finalize, and a static destructor running after the
  // interpreter's teardown must not touch MPI.
  static Progress* progress = new Progress();
  return *progress;
}

Progress::Progress() : worker_([this] { loop(); }) {}

void Progress::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw std::logic_error("gradsync backend: the process's MPI was finalized; no more collectives");
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void Progress::run_and_wait(const std::function<void()>& job) {
  std::promise<void> done;
  std::future<void> result = done.get_future();
  enqueue([&] {
    try {
      job();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  result.get();
}

void Progress::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void Progress::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gradsync backend: a job failed outside any collective's error path: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

}  // namespace gradsync::torch_backend
