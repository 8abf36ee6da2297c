#pragma once
// The cross-core bound of a ring allreduce on one node, measured at the same moments as the allreduces it is
// compared with. membound (memory_bound.hpp) streams a ring's bytes through each rank's own memory, so it never
// pays for a cache line that another core wrote last; a real allreduce always does, since every byte it receives
// was written by another core. This pseudo-method runs the ring's exact schedule (P-1 reduce-scatter steps, then
// P-1 all-gather steps) on buffers in an MPI-3 shared window, with plain loads and stores from the left
// neighbour's buffer and a barrier between steps: the same cache lines cross the same cores, with no message
// protocol, no kernel copy and no scratch. Its time is what a ring could take on this node if MPI cost nothing;
// a method's time / this time is the transport's share. It works on its own buffers, so bench_allreduce skips
// its correctness count; the constructor checks its sums once instead.
#include <mpi.h>

#include <algorithm>
#include <exception>
#include <span>
#include <stdexcept>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"

namespace gradsync::bench {

class CrossCoreBound final : public Allreduce {
 public:
  // Collective over `comm`, whose ranks must share a node (std::invalid_argument otherwise). Allocates and
  // touches a window of `max_count` floats per rank here, once; throws std::logic_error if its sum is wrong.
  CrossCoreBound(const Comm& comm, std::size_t max_count) : Allreduce(comm, no_check()), capacity_(max_count) {
    if (!comm.on_one_node()) throw std::invalid_argument("xcore: needs every rank on one node (a shared window)");
    const MPI_Aint bytes = static_cast<MPI_Aint>(std::max<std::size_t>(max_count, 1) * sizeof(float));
    // Each rank's buffer in its own pages, touched first by its owner, as a real gradient buffer would be (the
    // default packs the buffers back to back, sharing cache lines at the seams).
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    const int rc = MPI_Win_allocate_shared(bytes, sizeof(float), info, comm.native(), &mine_, &window_);
    MPI_Info_free(&info);
    check_mpi(rc, "MPI_Win_allocate_shared (xcore)", comm.rank());
    MPI_Aint left_bytes = 0;
    int unit = 0;
    const int left = (comm.rank() - 1 + comm.size()) % comm.size();
    check_mpi(MPI_Win_shared_query(window_, left, &left_bytes, &unit, &left_), "MPI_Win_shared_query (xcore)",
              comm.rank());
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, window_), "MPI_Win_lock_all (xcore)", comm.rank());
    // Every rank learns whether any rank's sums were wrong, so they all throw together instead of leaving the
    // others waiting at the benchmark's next barrier.
    if (!comm.all_ok(self_check(max_count))) {
      MPI_Win_unlock_all(window_);
      MPI_Win_free(&window_);
      throw std::logic_error("xcore: the shared-memory ring computed a wrong sum");
    }
  }
  // MPI_Win_free is collective. While an exception unwinds (maybe on this rank only, on its way to MPI_Abort),
  // freeing would wait for ranks that never come: the window is left to the job's end instead.
  ~CrossCoreBound() override {
    if (std::uncaught_exceptions() > 0) return;
    MPI_Win_unlock_all(window_);
    MPI_Win_free(&window_);
  }
  CrossCoreBound(const CrossCoreBound&) = delete;
  CrossCoreBound& operator=(const CrossCoreBound&) = delete;
  std::string_view name() const override { return "xcore"; }
  // This rank's buffer in the window (max_count floats): what run() reduces, whatever pointer it is given.
  std::span<float> window() const { return {mine_, capacity_}; }

 private:
  static AllreduceOptions no_check() {
    AllreduceOptions o;
    o.check_agreement = false;  // the bench calls every rank with the same count
    return o;
  }
  static std::size_t wrap(long long i, int p) { return static_cast<std::size_t>(((i % p) + p) % p); }

  // Between steps: every rank's stores of the last step are visible before anyone reads them (MPI-3 shared
  // memory needs MPI_Win_sync around the barrier for that).
  void step_barrier() const {
    MPI_Win_sync(window_);
    comm_.barrier();
    MPI_Win_sync(window_);
  }

  // The ring's schedule (collectives/ring_allreduce.cpp), reading the left neighbour's buffer in place.
  // A bound, not a schedule of messages: start() does the whole reduction at once.
  void begin(std::byte* data, std::size_t count, Dtype type) override {
    reduce(data, count, type);
    stage_ = {};
  }
  bool advance() override { return true; }
  void reduce(std::byte*, std::size_t count, Dtype) override {
    const int p = comm_.size(), r = comm_.rank();
    float* __restrict mine = mine_;
    const float* __restrict left = left_;
    for (int step = 0; step < p - 1; ++step) {
      const ElementRange seg = partition(count, p, wrap(r - step - 1, p));
      step_barrier();
      for (std::size_t i = seg.begin; i < seg.end; ++i) mine[i] += left[i];
    }
    for (int step = 0; step < p - 1; ++step) {
      const ElementRange seg = partition(count, p, wrap(r - step, p));
      step_barrier();
      std::copy(left + seg.begin, left + seg.end, mine + seg.begin);
    }
    // The right neighbour may still be copying from this buffer: nobody returns (and overwrites its buffer with
    // the next gradient) before everyone has finished reading. bench_sync's replica check caught the race.
    step_barrier();
  }

  // Integer-valued data, so the sums are exact: a wrong schedule would time the wrong traffic. True if this
  // rank's sums are right.
  bool self_check(std::size_t count) {
    const int p = comm_.size();
    for (std::size_t i = 0; i < count; ++i)
      mine_[i] = static_cast<float>((comm_.rank() + 1) * static_cast<int>(i % 7 + 1));
    if (count > 0 && p > 1) reduce(static_cast<std::byte*>(nullptr), count, Dtype::f32);
    step_barrier();
    const float ranks_sum = static_cast<float>(p * (p + 1) / 2);
    for (std::size_t i = 0; i < count; ++i)
      if (mine_[i] != ranks_sum * static_cast<float>(i % 7 + 1)) return false;
    return true;
  }

  std::size_t capacity_;
  MPI_Win window_ = MPI_WIN_NULL;
  float* mine_ = nullptr;
  float* left_ = nullptr;
};

}  // namespace gradsync::bench
