#pragma once
#include <cstdint>

#include "collectives/exchange_schedule.hpp"

namespace gradsync {

// Ring allreduce (Patarasuk & Yuan; the baidu-allreduce / Horovod / Gloo ring). The buffer is cut into P
// segments; P-1 reduce-scatter steps leave each rank with one fully summed segment, P-1 all-gather steps
// circulate the summed segments. Each rank sends 2(P-1)/P of the buffer, whatever P is. Messages are at most
// options.chunk_bytes (in a ring of two, cut into pieces of options.segment_bytes). Up to options.ring_window
// exchanges are in flight at once (a pipelined ring): while one chunk is being added, the next ones
// are already on the link (exchange_schedule.hpp runs the window). The scratch memory is one chunk per window slot
// (two on a bf16 wire), allocated on the first call of a shape. On
// bf16_wire() ("ring-bf16", float32 only) every message carries bfloat16 (ring_wire.hpp): partial sums are rounded
// once per reduce-scatter hop and added in float32; each finished segment is rounded once by its owner, which keeps the
// rounded value too, so every rank ends with the same bits.

// Which of the ring's two phases a RingAllreduce runs. A two-level method (hier_allreduce.hpp) runs the halves on
// a host's ranks with a ring across hosts between them.
enum class RingPhases : std::uint8_t {
  both,            // an allreduce
  reduce_scatter,  // afterwards rank r holds the sum of segment (r+1) % P of partition(count, P, .); the rest is
                   // scratch
  all_gather,      // expects rank r to hold segment (r+1) % P; afterwards every rank holds every segment
};

class RingAllreduce final : public ScheduledAllreduce {
 public:
  // Collective only in make_allreduce, which resolves options.chunk_bytes and segment_bytes; here both must already
  // be > 0 (std::invalid_argument otherwise: a 0 would silently mean one-element messages), and ring_window >= 1.
  // Reserves two tags on `comm` (Comm::reserve_tags). `wire`: native_wire() ("ring") or bf16_wire() ("ring-bf16").
  RingAllreduce(Comm comm, AllreduceOptions options, RingPhases phases = RingPhases::both,
                const RingWire& wire = native_wire());
  std::string_view name() const override { return &wire() == &bf16_wire() ? "ring-bf16" : "ring"; }

 private:
  void plan(std::size_t count, Dtype type, Schedule& schedule) const override;

  RingPhases phases_;
  int left_;
  int right_;
};

}  // namespace gradsync
