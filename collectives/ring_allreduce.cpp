#include "collectives/ring_allreduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "collectives/bf16.hpp"
#include "collectives/watchdog.hpp"

namespace gradsync {
namespace {

constexpr int kTagReduceScatter = 0x52;
constexpr int kTagAllGather = 0x47;
constexpr std::size_t kMaxElementBytes = 8;

std::size_t wrap(long long i, int p) { return static_cast<std::size_t>(((i % p) + p) % p); }

}  // namespace

//   4 ranks, buffer cut into segments s0..s3.       reduce-scatter step k: rank r sends segment r-k to r+1,
//   rank:   0    1    2    3                        receives segment r-k-1 from r-1 and adds it in.
//         [s0] [s1] [s2] [s3]  ->  after 3 steps    all-gather step k: rank r sends its finished segment r+1-k,
//   rank r holds the complete sum of segment r+1;    receives the finished segment r-k and overwrites.
RingAllreduce::RingAllreduce(Comm comm, AllreduceOptions options)
    : Allreduce(std::move(comm), options),
      left_((comm_.rank() - 1 + comm_.size()) % comm_.size()),
      right_((comm_.rank() + 1) % comm_.size()),
      scratch_(std::max(options.chunk_bytes, kMaxElementBytes)) {
  if (options.chunk_bytes == kAutoChunkBytes)
    throw std::invalid_argument("RingAllreduce: chunk_bytes is 0 (automatic); build the ring with make_allreduce");
  if (options.bf16_wire) outgoing_.resize(chunk_elements(2));
}

void RingAllreduce::require_supported(Dtype type) const {
  if (options_.bf16_wire && type != Dtype::f32)
    throw std::invalid_argument(fmt::format("{} reduces float32 only, not {}", name(), dtype_name(type)));
}

void RingAllreduce::reduce(void* data, std::size_t count, Dtype type) {
  auto* bytes = static_cast<std::byte*>(data);
  reduce_scatter(bytes, count, type);
  if (options_.bf16_wire) {
    // The owner of each finished segment keeps the value its neighbours will receive: bit-identical replicas.
    const ElementRange mine = partition(count, comm_.size(), wrap(comm_.rank() + 1, comm_.size()));
    round_to_bf16(reinterpret_cast<float*>(bytes) + mine.begin, mine.size());
  }
  all_gather(bytes, count, type);
}

// Segments differ in length by at most one element, so two segments may need different numbers of chunks.
// Every rank therefore runs the chunk count of the largest segment in every step; a chunk past the end of a
// shorter segment is an empty message. That keeps each link's sends and receives matched one to one.
void RingAllreduce::reduce_scatter(std::byte* data, std::size_t count, Dtype type) {
  const int p = comm_.size(), r = comm_.rank();
  const std::size_t elem = dtype_size(type);
  const std::size_t chunk = chunk_elements(wire_bytes(type));
  const std::size_t chunks = (partition(count, p, 0).size() + chunk - 1) / chunk;
  for (int step = 0; step < p - 1; ++step) {
    const ElementRange send = partition(count, p, wrap(r - step, p));
    const ElementRange recv = partition(count, p, wrap(r - step - 1, p));
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t send_from = std::min(send.begin + c * chunk, send.end);
      const std::size_t send_n = std::min(chunk, send.end - send_from);
      const std::size_t recv_from = std::min(recv.begin + c * chunk, recv.end);
      const std::size_t recv_n = std::min(chunk, recv.end - recv_from);
      const WaitScope wait("MPI_Sendrecv (ring reduce-scatter; sending to the right, receiving from the left neighbour)",
                           -1, left_);
      if (options_.bf16_wire) {
        auto* values = reinterpret_cast<float*>(data);
        auto* incoming = reinterpret_cast<std::uint16_t*>(scratch_.data());
        to_bf16(values + send_from, outgoing_.data(), send_n);
        comm_.sendrecv(outgoing_.data(), send_n, right_, incoming, recv_n, left_, MPI_UINT16_T, kTagReduceScatter);
        add_bf16_into(values + recv_from, incoming, recv_n);
        continue;
      }
      comm_.sendrecv(data + send_from * elem, send_n, right_, scratch_.data(), recv_n, left_, mpi_type(type),
                     kTagReduceScatter);
      add_into(data + recv_from * elem, scratch_.data(), recv_n, type);
    }
  }
}

// No scratch needed: a finished segment is received straight into its place in the buffer (on a bf16 wire, into
// the scratch, then widened into place). Finished segments are bf16 values already, so converting them again for
// the next hop is exact.
void RingAllreduce::all_gather(std::byte* data, std::size_t count, Dtype type) {
  const int p = comm_.size(), r = comm_.rank();
  const std::size_t elem = dtype_size(type);
  const std::size_t chunk = chunk_elements(wire_bytes(type));
  const std::size_t chunks = (partition(count, p, 0).size() + chunk - 1) / chunk;
  for (int step = 0; step < p - 1; ++step) {
    const ElementRange send = partition(count, p, wrap(r + 1 - step, p));
    const ElementRange recv = partition(count, p, wrap(r - step, p));
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t send_from = std::min(send.begin + c * chunk, send.end);
      const std::size_t recv_from = std::min(recv.begin + c * chunk, recv.end);
      const WaitScope wait("MPI_Sendrecv (ring all-gather; sending to the right, receiving from the left neighbour)", -1,
                           left_);
      if (options_.bf16_wire) {
        auto* values = reinterpret_cast<float*>(data);
        auto* incoming = reinterpret_cast<std::uint16_t*>(scratch_.data());
        const std::size_t send_n = std::min(chunk, send.end - send_from), recv_n = std::min(chunk, recv.end - recv_from);
        to_bf16(values + send_from, outgoing_.data(), send_n);
        comm_.sendrecv(outgoing_.data(), send_n, right_, incoming, recv_n, left_, MPI_UINT16_T, kTagAllGather);
        from_bf16(incoming, values + recv_from, recv_n);
        continue;
      }
      comm_.sendrecv(data + send_from * elem, std::min(chunk, send.end - send_from), right_, data + recv_from * elem,
                     std::min(chunk, recv.end - recv_from), left_, mpi_type(type), kTagAllGather);
    }
  }
}

}  // namespace gradsync
