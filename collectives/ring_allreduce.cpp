#include "collectives/ring_allreduce.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsync {
namespace {

constexpr int kTagReduceScatter = 0x52;
constexpr int kTagAllGather = 0x47;
constexpr std::size_t kMaxElementBytes = 8;
constexpr const char* kReduceScatterWait = "ring reduce-scatter: send right, receive from the left neighbour";
constexpr const char* kAllGatherWait = "ring all-gather: send right, receive from the left neighbour";

std::size_t wrap(long long i, int p) { return static_cast<std::size_t>(((i % p) + p) % p); }

}  // namespace

RingAllreduce::RingAllreduce(Comm comm, AllreduceOptions options, RingPhases phases)
    : Allreduce(std::move(comm), options), wire_(options.bf16_wire ? bf16_wire() : native_wire()), phases_(phases),
      left_((comm_.rank() - 1 + comm_.size()) % comm_.size()), right_((comm_.rank() + 1) % comm_.size()),
      slot_bytes_(std::max(options.chunk_bytes, kMaxElementBytes)),
      scratch_(slot_bytes_ * std::max<std::size_t>(1, options.ring_window)) {
  if (options.chunk_bytes == kAutoChunkBytes || options.segment_bytes == kAutoSegmentBytes)
    throw std::invalid_argument(
        "RingAllreduce: chunk_bytes or segment_bytes is 0 (automatic); build the ring with make_allreduce");
  if (options.ring_window == kAutoRingWindow)
    throw std::invalid_argument("RingAllreduce: ring_window is 0 (automatic); build the ring with make_allreduce");
  if (options.bf16_wire) outgoing_.resize(scratch_.size());
}

//   4 ranks, buffer cut into segments s0..s3.       reduce-scatter step k: rank r sends segment r-k to r+1,
//   rank:   0    1    2    3                        receives segment r-k-1 from r-1 and adds it in.
//         [s0] [s1] [s2] [s3]  ->  after 3 steps    all-gather step k: rank r sends its finished segment r+1-k,
//   rank r holds the complete sum of segment r+1;    receives the finished segment r-k and overwrites.
// Segments differ in length by at most one element, so two segments may need different numbers of chunks.
// Every rank therefore runs the chunk count of the largest segment in every step; a chunk past the end of a
// shorter segment is an empty message. That keeps each link's sends and receives matched one to one.
void RingAllreduce::plan(std::size_t count, Dtype type) {
  if (!steps_.empty() && planned_count_ == count && planned_type_ == type) return;
  const int p = comm_.size(), r = comm_.rank();
  const auto segment = [&](long long i) { return partition(count, p, wrap(i, p)); };
  steps_.clear();
  if (phases_ != RingPhases::all_gather)
    for (int k = 0; k < p - 1; ++k) steps_.push_back({segment(r - k), segment(r - k - 1), true});  // reduce-scatter
  reduce_scatter_steps_ = steps_.size();
  if (phases_ != RingPhases::reduce_scatter)
    for (int k = 0; k < p - 1; ++k) steps_.push_back({segment(r + 1 - k), segment(r - k), false});  // all-gather
  chunk_ = std::max<std::size_t>(1, options_.chunk_bytes / wire_.element_bytes(type));
  chunks_ = (partition(count, p, 0).size() + chunk_ - 1) / chunk_;
  window_ = std::min(options_.ring_window, chunks_);
  pieces_ = cut(type).pieces(chunk_);
  requests_.assign(2 * pieces_ * options_.ring_window, MPI_REQUEST_NULL);
  planned_count_ = count;
  planned_type_ = type;
}

void RingAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  plan(count, type);
  data_ = data;
  oldest_ = 0;
  posted_ = 0;
  while (posted_ < std::min(window_, total_exchanges())) post(posted_++);
  stage_ = {{&requests_[0], 2 * pieces_}, steps_[0].add ? kReduceScatterWait : kAllGatherWait, left_};
}

// With two ranks the left and right neighbour are one rank, and both directions share one connection: the pairwise
// case of segments.hpp. With more, each connection carries data one way only and a chunk goes as one message.
Segmenter RingAllreduce::cut(Dtype type) const {
  return {left_ == right_ ? options_.segment_bytes : kWholeMessages, wire_.element_bytes(type)};
}

void RingAllreduce::post(std::size_t i) {
  const Step& step = steps_[i / chunks_];
  const ElementRange send = chunk_of(step.send, i % chunks_), recv = chunk_of(step.recv, i % chunks_);
  const std::size_t elem = dtype_size(planned_type_);
  const MPI_Datatype wire_type = wire_.mpi_element(planned_type_);
  const int tag = step.add ? kTagReduceScatter : kTagAllGather;
  const std::size_t slot = i % window_;
  const Segmenter pieces = cut(planned_type_);
  MPI_Request* requests = &requests_[2 * pieces_ * slot];
  std::fill(requests, requests + 2 * pieces_, MPI_REQUEST_NULL);
  void* landing = wire_.landing(data_ + recv.begin * elem, !step.add, slot_scratch(i));
  pieces.irecv(static_cast<std::byte*>(landing), recv.size(), wire_type, left_, tag, comm_, requests,
               "MPI_Irecv (ring, from the left neighbour)");
  std::byte* outgoing = outgoing_.empty() ? nullptr : outgoing_.data() + slot * slot_bytes_;
  const void* message = wire_.pack(data_ + send.begin * elem, send.size(), planned_type_, outgoing);
  pieces.isend(static_cast<const std::byte*>(message), send.size(), wire_type, right_, tag, comm_, requests + pieces_,
               "MPI_Isend (ring, to the right neighbour)");
}

// The last reduce-scatter step finishes this rank's segment chunk by chunk: each chunk is sealed as it lands,
// before the all-gather sends it (a window behind).
void RingAllreduce::land(std::size_t i) {
  const std::size_t s = i / chunks_;
  const Step& step = steps_[s];
  const ElementRange recv = chunk_of(step.recv, i % chunks_);
  const std::size_t elem = dtype_size(planned_type_);
  std::byte* values = data_ + recv.begin * elem;
  if (step.add)
    wire_.add(values, slot_scratch(i), recv.size(), planned_type_);
  else
    wire_.overwrite(values, slot_scratch(i), recv.size(), planned_type_);
  if (s + 1 == reduce_scatter_steps_) wire_.seal(values, recv.size(), planned_type_);
}

bool RingAllreduce::advance() {
  land(oldest_);
  ++oldest_;
  if (oldest_ == total_exchanges()) return true;
  if (posted_ < total_exchanges()) post(posted_++);  // into the slot just freed
  const std::size_t slot = oldest_ % window_;
  stage_ = {{&requests_[2 * pieces_ * slot], 2 * pieces_},
            steps_[oldest_ / chunks_].add ? kReduceScatterWait : kAllGatherWait,
            left_};
  return false;
}

}  // namespace gradsync
