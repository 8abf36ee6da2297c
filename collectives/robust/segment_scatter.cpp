#include "collectives/robust/segment_scatter.hpp"

#include <algorithm>

#include "collectives/allreduce_method.hpp"

namespace gradsync {
namespace {

constexpr ExchangeKind kScatter{0, "robust aggregation all-to-all: each rank's copy of this rank's segment",
                                "MPI_Irecv (robust all-to-all, a segment from rank r - k)",
                                "MPI_Isend (robust all-to-all, the segment rank r + k owns)"};

}  // namespace

SegmentScatter::SegmentScatter(Comm comm)
    : ScheduledAllreduce(comm, resolve_transport(comm, AllreduceOptions{}, false), native_wire(), 1) {}

ElementRange SegmentScatter::owned(std::size_t count, int rank) const {
  const auto p = static_cast<std::size_t>(comm_.size());
  return partition(count, p, (static_cast<std::size_t>(rank) + 1) % p);
}

std::size_t SegmentScatter::segment_stride(std::size_t count) const {
  return partition(count, static_cast<std::size_t>(comm_.size()), 0).size();
}

void SegmentScatter::run_on(float* workspace, std::size_t count) {
  const int r = comm_.rank();
  const ElementRange mine = owned(count, r);
  std::copy(workspace + mine.begin, workspace + mine.end,
            workspace + count + static_cast<std::size_t>(r) * segment_stride(count));
  vector_count_ = count;
  run(workspace, workspace_count(count), Dtype::f32);
}

// The executor caches the plan per workspace count, which grows strictly with the vector's count, so a plan is never
// reused for another vector count.
void SegmentScatter::plan(std::size_t, Dtype, Schedule& schedule) const {
  const int p = comm_.size(), r = comm_.rank();
  const std::size_t count = vector_count_, stride = segment_stride(count);
  const ElementRange mine = owned(count, r);
  for (int k = 1; k < p; ++k) {
    const int to = (r + k) % p, from = (r - k + p) % p;
    const std::size_t slot = count + static_cast<std::size_t>(from) * stride;
    schedule.steps.push_back({.kind = &kScatter,
                              .to = to,
                              .from = from,
                              .send = owned(count, to),
                              .recv = {slot, slot + mine.size()},
                              .add = false});
  }
  schedule.segment_bytes = options_.segment_bytes;
}

}  // namespace gradsync
