#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/ring_wire.hpp"

namespace gradsync {

// Ring allreduce (Patarasuk & Yuan; the baidu-allreduce / Horovod / Gloo ring). The buffer is cut into P
// segments; P-1 reduce-scatter steps leave each rank with one fully summed segment, P-1 all-gather steps
// circulate the summed segments. Each rank sends 2(P-1)/P of the buffer, whatever P is. Messages are at most
// options.chunk_bytes (in a ring of two, cut into pieces of options.segment_bytes). Up to options.ring_window
// exchanges are in flight at once (a pipelined ring): while one chunk is being added, the next ones
// are already on the link. Every rank posts its exchanges in the same order, so sends and receives match one to one
// whatever the window; the scratch memory is one chunk per window slot (two on a bf16 wire), allocated here, once. With
// options.bf16_wire ("ring-bf16", float32 only) every message carries bfloat16 (ring_wire.hpp): partial sums are rounded
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

class RingAllreduce final : public Allreduce {
 public:
  // Collective only in make_allreduce, which resolves options.chunk_bytes and segment_bytes; here both must already
  // be > 0 (std::invalid_argument otherwise: a 0 would silently mean one-element messages), and ring_window >= 1.
  RingAllreduce(Comm comm, AllreduceOptions options, RingPhases phases = RingPhases::both);
  std::string_view name() const override { return options_.bf16_wire ? "ring-bf16" : "ring"; }

 private:
  // One step of the schedule: the segment this rank sends to the right, and the one it receives from the left
  // and adds in (reduce-scatter) or takes as it is (all-gather). Each step moves its segments chunk by chunk.
  struct Step {
    ElementRange send, recv;
    bool add = true;
  };

  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  void require_supported(Dtype type) const override { wire_.require_supported(type); }
  // The schedule of a reduction of `count` elements of `type`: planned on the first call with that shape, reused.
  void plan(std::size_t count, Dtype type);
  // How this ring's messages are cut for the wire type of `type` (segments.hpp).
  Segmenter cut(Dtype type) const;
  // Posts exchange `i` of the schedule (chunk i % chunks_ of step i / chunks_) into window slot i % window_.
  void post(std::size_t i);
  // Adds or takes exchange `i`'s message once it has arrived.
  void land(std::size_t i);
  std::size_t total_exchanges() const { return chunks_ * steps_.size(); }
  std::byte* slot_scratch(std::size_t i) { return scratch_.data() + (i % window_) * slot_bytes_; }
  ElementRange chunk_of(ElementRange segment, std::size_t c) const {
    return {std::min(segment.begin + c * chunk_, segment.end), std::min(segment.begin + (c + 1) * chunk_, segment.end)};
  }

  const RingWire& wire_;
  RingPhases phases_;
  int left_;
  int right_;
  std::size_t slot_bytes_;           // one chunk
  std::vector<std::byte> scratch_;   // per slot: where a neighbour's message lands when it is not taken in place
  std::vector<std::byte> outgoing_;  // per slot: this rank's values in wire format, when the wire converts them
  // The plan for one shape.
  std::size_t planned_count_ = 0;
  Dtype planned_type_ = Dtype::f32;
  std::vector<Step> steps_;  // reduce-scatter steps, then all-gather steps (as phases_ asks)
  std::size_t reduce_scatter_steps_ = 0;
  std::size_t chunk_ = 1;   // elements per message
  std::size_t chunks_ = 0;  // messages per step
  // Exchanges in flight at most: an exchange may be posted once the one a window earlier has landed, and its data
  // is ready once the same chunk of the step before has landed, which holds as long as the window is at most
  // chunks_ (so it is min(options.ring_window, chunks_)).
  std::size_t window_ = 1;
  std::size_t pieces_ = 1;  // messages per chunk in each direction: more than one only in a ring of two
  // The reduction in flight.
  std::byte* data_ = nullptr;
  std::size_t oldest_ = 0;             // the oldest exchange in flight: the stage waits for it
  std::size_t posted_ = 0;             // exchanges posted so far
  std::vector<MPI_Request> requests_;  // per window slot: the receive's pieces, then the send's
};

}  // namespace gradsync
