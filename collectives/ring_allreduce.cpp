#include "collectives/ring_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/cost_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsync {
namespace {

constexpr ExchangeKind kReduceScatter{0, "ring reduce-scatter: send right, receive from the left neighbour",
                                      "MPI_Irecv (ring, from the left neighbour)",
                                      "MPI_Isend (ring, to the right neighbour)"};
constexpr ExchangeKind kAllGather{1, "ring all-gather: send right, receive from the left neighbour",
                                  "MPI_Irecv (ring, from the left neighbour)",
                                  "MPI_Isend (ring, to the right neighbour)"};
constexpr int kTags = 2;

std::size_t wrap(long long i, int p) { return static_cast<std::size_t>(((i % p) + p) % p); }

}  // namespace

RingAllreduce::RingAllreduce(Comm comm, AllreduceOptions options, RingPhases phases, const RingWire& wire)
    : ScheduledAllreduce(std::move(comm), options, wire, kTags), phases_(phases),
      left_((comm_.rank() - 1 + comm_.size()) % comm_.size()), right_((comm_.rank() + 1) % comm_.size()) {
  if (options.chunk_bytes == kAutoChunkBytes || options.segment_bytes == kAutoSegmentBytes)
    throw std::invalid_argument(
        "RingAllreduce: chunk_bytes or segment_bytes is 0 (automatic); build the ring with make_allreduce");
  if (options.ring_window == kAutoRingWindow)
    throw std::invalid_argument("RingAllreduce: ring_window is 0 (automatic); build the ring with make_allreduce");
}

//   4 ranks, buffer cut into segments s0..s3.       reduce-scatter step k: rank r sends segment r-k to r+1,
//   rank:   0    1    2    3                        receives segment r-k-1 from r-1 and adds it in.
//         [s0] [s1] [s2] [s3]  ->  after 3 steps    all-gather step k: rank r sends its finished segment r+1-k,
//   rank r holds the complete sum of segment r+1;    receives the finished segment r-k and overwrites.
// Segments differ in length by at most one element, so two segments may need different numbers of chunks.
// Every rank therefore runs the chunk count of the largest segment in every step; a chunk past the end of a
// shorter segment is an empty message. That keeps each link's sends and receives matched one to one. The last
// reduce-scatter step finishes this rank's segment chunk by chunk: each chunk is sealed as it lands, before the
// all-gather sends it (a window behind).
// With two ranks the left and right neighbour are one rank, and both directions share one connection: the pairwise
// case of segments.hpp. With more, each connection carries data one way only and a chunk goes as one message.
void RingAllreduce::plan(std::size_t count, Dtype type, Schedule& schedule) const {
  const int p = comm_.size(), r = comm_.rank();
  const auto segment = [&](long long i) { return partition(count, p, wrap(i, p)); };
  if (phases_ != RingPhases::all_gather)
    for (int k = 0; k < p - 1; ++k)
      schedule.steps.push_back({&kReduceScatter, right_, left_, segment(r - k), segment(r - k - 1), true, k + 2 == p});
  if (phases_ != RingPhases::reduce_scatter)
    for (int k = 0; k < p - 1; ++k)
      schedule.steps.push_back({&kAllGather, right_, left_, segment(r + 1 - k), segment(r - k), false});
  schedule.chunk = std::max<std::size_t>(1, options_.chunk_bytes / wire().element_bytes(type));
  schedule.chunks = (partition(count, p, 0).size() + schedule.chunk - 1) / schedule.chunk;
  schedule.window = std::min(options_.ring_window, schedule.chunks);
  schedule.segment_bytes = left_ == right_ ? options_.segment_bytes : kWholeMessages;
}

// The ring's cost: 2(P-1) steps of a P-th of the message over the ring's slowest link, each in as many chunks as
// its chunk size cuts it into, and P-1 reductions of a P-th.
std::optional<double> ring_cost(const CostModel& model, const CostQuery& q) {
  const CostLinks links(model, q);
  const LinkCost flat = links.flat_ring();
  const double n = static_cast<double>(q.bytes), p = q.ranks;
  return 2 * (p - 1) * links.messages(n / p) * flat.alpha_s + 2.0 * (p - 1) / p * n * flat.beta_s_per_byte +
         (p - 1.0) / p * n * model.gamma_s_per_byte;
}

std::unique_ptr<Allreduce> make_ring_method(const Comm& comm, const AllreduceOptions& o, const RingWire& wire) {
  return std::make_unique<RingAllreduce>(comm, resolve_transport(comm, o, true), RingPhases::both, wire);
}

extern const AllreduceMethod ring_allreduce_method = {
    .name = "ring",
    .summary = "ring allreduce: reduce-scatter then all-gather with the neighbours, 2(P-1) steps",
    .chunked = true,
    .segmented = true,
    .build = [](const Comm& comm, const AllreduceOptions& o) { return make_ring_method(comm, o, native_wire()); },
    .cost = ring_cost,
};

extern const AllreduceMethod ring_bf16_allreduce_method = {
    .name = "ring-bf16",
    .summary = "the ring sending float32 as bfloat16: half the bytes, each value rounded to 2^-8 per hop",
    .exact = false,
    .float32_only = true,
    .chunked = true,
    .segmented = true,
    .build = [](const Comm& comm, const AllreduceOptions& o) { return make_ring_method(comm, o, bf16_wire()); },
};

}  // namespace gradsync
