#pragma once
// The all-to-all that robust aggregation starts with: every rank receives every rank's copy of the segment it owns,
// the bytes a ring's reduce-scatter moves, but kept apart instead of summed (a median is not a sum). Segments are the
// ring's (partition(count, p, s): sizes differ by at most one) and rank r owns segment (r + 1) % p, as after the
// ring's reduce-scatter, so the ring's own all-gather phase (ring_allreduce.hpp) returns the results.
//
// It runs on the exchange executor (exchange_schedule.hpp) over one workspace: the first `count` elements are this
// rank's vector, then p slots of segment_stride(count) elements, slot i for rank i's copy of this rank's segment.
// Exchange k = 1 .. p-1 sends to rank r + k the segment it owns and receives rank r - k's copy into its slot, taken
// as it arrives (no addition): each rank sends (p - 1) / p of the vector, one segment to each other rank.
#include <cstddef>

#include "collectives/exchange_schedule.hpp"

namespace gradsync {

class SegmentScatter final : public ScheduledAllreduce {
 public:
  // Local apart from the collective MPI_Comm_split_type that resolves the message pieces (resolve_transport) and
  // the tags it reserves: every rank of `comm` constructs it at the same point.
  explicit SegmentScatter(Comm comm);
  std::string_view name() const override { return "robust-scatter"; }

  // The segment rank `rank` owns, of a vector of `count` elements.
  ElementRange owned(std::size_t count, int rank) const;
  // Slot length: the largest segment.
  std::size_t segment_stride(std::size_t count) const;
  // Elements of the workspace for a vector of `count` elements.
  std::size_t workspace_count(std::size_t count) const {
    return count + static_cast<std::size_t>(comm_.size()) * segment_stride(count);
  }
  // Collective over the communicator, every rank with the same `count`: fills the slots of `workspace`
  // (workspace_count(count) floats, the vector in its first `count`), this rank's own slot included. A count that
  // differs between ranks throws MismatchError on every rank before any data moves (the agreement check).
  void run_on(float* workspace, std::size_t count);

 private:
  void plan(std::size_t count, Dtype type, Schedule& schedule) const override;

  std::size_t vector_count_ = 0;  // the `count` of the run in progress (the executor plans the workspace's count)
};

}  // namespace gradsync
