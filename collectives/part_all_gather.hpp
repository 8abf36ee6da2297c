#pragma once
// An all-gather of parts whose length differs from rank to rank and from call to call (a sparse gradient's values
// and indices, say), written on point-to-point messages like the ring allreduce: P-1 steps, in each of which every
// rank passes the part it received last to its right neighbour and receives the next from its left. A part travels
// with its length as its first word, so a receiver learns the length from the message alone (no count exchange, no
// MPI_Probe) and the wire carries each part's words once per hop: (P-1) * (1 + length) words sent per rank for
// parts of equal length.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

class PartAllGather {
 public:
  // Plans the exchange on `comm` for parts of at most `capacity` 32-bit words, allocating its buffer
  // (size() * (capacity + 1) words) once. Local, but reserves tags: every rank of `comm` constructs its
  // PartAllGather objects in the same order with the same capacity.
  PartAllGather(Comm comm, std::size_t capacity);

  // Collective over the communicator: every rank calls it once per exchange, mine.size() <= capacity (else
  // std::invalid_argument, before any message). Afterwards part(r) is rank r's part, for every rank r, this one's
  // included. A part longer than this rank's capacity (ranks that planned different capacities) fails the receive
  // with MpiError naming the call and the rank; so does a failed MPI call. run() is start() then wait().
  void run(std::span<const std::int32_t> mine);

  // The same exchange, nonblocking: start() copies `mine` (the caller may reuse it at once) and posts the first
  // step; test() moves the ring on without blocking and returns true once every part has arrived; wait() blocks
  // until then. Every rank starts the same sequence of exchanges on this object; one is in flight at a time
  // (start() while one is throws std::logic_error), and part() is read only after it completed. Errors are run()'s,
  // thrown from the start(), test() or wait() that finds them.
  void start(std::span<const std::int32_t> mine);
  bool test();
  void wait();

  // Rank `rank`'s part from the last completed exchange: a view into this object's buffer, valid until the next
  // start().
  std::span<const std::int32_t> part(int rank) const;
  std::size_t capacity() const { return capacity_; }
  const Comm& comm() const { return comm_; }

 private:
  std::span<std::int32_t> slot(int rank) {
    return {slots_.data() + static_cast<std::size_t>(rank) * (capacity_ + 1), capacity_ + 1};
  }
  // Posts ring step `step_`, or marks the exchange complete after the last one.
  void post_step();
  // The current step's messages arrived: checks the received length and posts the next step.
  void finish_step();

  Comm comm_;
  std::size_t capacity_;
  int tag_;
  std::vector<std::int32_t> slots_;  // rank r's part at r * (capacity + 1): its length, then its words
  std::array<MPI_Request, 2> requests_ = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int step_ = 0;
  bool in_flight_ = false;
};

}  // namespace gradsync
