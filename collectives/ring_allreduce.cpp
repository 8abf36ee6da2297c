#include "collectives/ring_allreduce.hpp"

#include <stdexcept>

namespace gradsync {
namespace {

constexpr int kTagReduceScatter = 0x52;
constexpr int kTagAllGather = 0x47;
constexpr std::size_t kMaxElementBytes = 8;

std::size_t wrap(long long i, int p) { return static_cast<std::size_t>(((i % p) + p) % p); }

}  // namespace

RingAllreduce::RingAllreduce(Comm comm, AllreduceOptions options)
    : Allreduce(std::move(comm), options),
      wire_(options.bf16_wire ? bf16_wire() : native_wire()),
      left_((comm_.rank() - 1 + comm_.size()) % comm_.size()),
      right_((comm_.rank() + 1) % comm_.size()),
      scratch_(std::max(options.chunk_bytes, kMaxElementBytes)) {
  if (options.chunk_bytes == kAutoChunkBytes)
    throw std::invalid_argument("RingAllreduce: chunk_bytes is 0 (automatic); build the ring with make_allreduce");
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
  for (int k = 0; k < p - 1; ++k) steps_.push_back({segment(r - k), segment(r - k - 1), true});    // reduce-scatter
  for (int k = 0; k < p - 1; ++k) steps_.push_back({segment(r + 1 - k), segment(r - k), false});  // all-gather
  finished_ = segment(r + 1);
  chunk_ = std::max<std::size_t>(1, options_.chunk_bytes / wire_.element_bytes(type));
  chunks_ = (partition(count, p, 0).size() + chunk_ - 1) / chunk_;
  planned_count_ = count;
  planned_type_ = type;
}

void RingAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  plan(count, type);
  data_ = data;
  next_ = 0;
  post(0);
}

void RingAllreduce::post(std::size_t i) {
  const Step& step = steps_[i / chunks_];
  const ElementRange send = chunk_of(step.send, i % chunks_), recv = chunk_of(step.recv, i % chunks_);
  const std::size_t elem = dtype_size(planned_type_);
  const MPI_Datatype wire_type = wire_.mpi_element(planned_type_);
  const int tag = step.add ? kTagReduceScatter : kTagAllGather;
  void* landing = wire_.landing(data_ + recv.begin * elem, !step.add, scratch_.data());
  check_mpi(MPI_Irecv(landing, comm_.to_int_count(recv.size(), "MPI_Irecv"), wire_type, left_, tag, comm_.native(),
                      &requests_[0]),
            "MPI_Irecv (ring, from the left neighbour)", comm_.rank());
  const void* message = wire_.pack(data_ + send.begin * elem, send.size(), planned_type_, outgoing_.data());
  check_mpi(MPI_Isend(message, comm_.to_int_count(send.size(), "MPI_Isend"), wire_type, right_, tag, comm_.native(),
                      &requests_[1]),
            "MPI_Isend (ring, to the right neighbour)", comm_.rank());
  stage_ = {requests_, step.add ? "ring reduce-scatter: send right, receive from the left neighbour"
                                : "ring all-gather: send right, receive from the left neighbour",
            left_};
}

bool RingAllreduce::advance() {
  const Step& step = steps_[next_ / chunks_];
  const ElementRange recv = chunk_of(step.recv, next_ % chunks_);
  const std::size_t elem = dtype_size(planned_type_);
  std::byte* values = data_ + recv.begin * elem;
  if (step.add)
    wire_.add(values, scratch_.data(), recv.size(), planned_type_);
  else
    wire_.overwrite(values, scratch_.data(), recv.size(), planned_type_);
  ++next_;
  const std::size_t reduce_scatter_end = chunks_ * (steps_.size() / 2);
  if (next_ == reduce_scatter_end) wire_.seal(data_ + finished_.begin * elem, finished_.size(), planned_type_);
  if (next_ == chunks_ * steps_.size()) return true;
  post(next_);
  return false;
}

}  // namespace gradsync
