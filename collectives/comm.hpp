#pragma once
// A small view of an MPI communicator. Every MPI call made through it is checked: a failure becomes an
// MpiError whose message names the call and the rank, instead of Open MPI's default abort.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradsync {

struct MpiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws MpiError "MPI_Sendrecv failed on rank 3: <MPI's error string>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call, int rank);

// Message tags below this are left to code that picks its own (Comm::send and recv callers); Comm::reserve_tags
// hands out tags from here to MPI_TAG_UB.
inline constexpr int kFirstReservedTag = 1024;
// The rule behind Comm::reserve_tags, apart from MPI: the first of `n` tags given that `next` is the next free one
// and `tag_ub` the largest tag allowed. A block that would pass `tag_ub` starts again at kFirstReservedTag (the
// tags wrap). Throws std::invalid_argument if n < 1 or n is more than the whole range.
int first_reserved_tag(std::int64_t next, int n, int tag_ub);

class Comm {
 public:
  // MPI_COMM_WORLD, switched to MPI_ERRORS_RETURN so that errors reach check_mpi. Requires MPI_Init.
  static Comm world();
  // Wraps `comm` without taking ownership (and sets MPI_ERRORS_RETURN on it).
  explicit Comm(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm native() const { return *handle_; }

  // Collective over this communicator. Ranks passing the same `color` form one new communicator, ordered by
  // `key`; a rank passing MPI_UNDEFINED gets an empty optional-like Comm (valid() == false). The new Comm owns
  // its handle and frees it when the last copy goes away.
  Comm split(int color, int key) const;
  bool valid() const { return handle_ && *handle_ != MPI_COMM_NULL; }
  // Collective over this communicator: whether all its ranks share one node's memory (MPI_Comm_split_type with
  // MPI_COMM_TYPE_SHARED). Every rank gets the same answer.
  bool on_one_node() const;
  // Collective over this communicator: the ranks that share this rank's node (MPI_Comm_split_type with
  // MPI_COMM_TYPE_SHARED), ordered as here.
  Comm split_by_node() const;
  // Collective over this communicator: the smallest and largest `value` any rank passed, the same on every rank
  // (one MPI_Allreduce). Equal exactly when all ranks passed the same value. Values must stay below 2^63 to be true
  // minima and maxima on every MPI: Debian's MPICH 4.0 compares MPI_UINT64_T as signed (the equality test holds
  // for any value).
  std::pair<std::uint64_t, std::uint64_t> min_max(std::uint64_t value) const;
  // Collective over this communicator: true on every rank iff every rank passed true. A rank that hit a local
  // problem (a file it cannot read, memory it cannot get) reports it here, so all ranks leave together instead of
  // some waiting forever in their next collective for one that gave up.
  bool all_ok(bool ok) const;

  // Point-to-point, blocking. Counts are in elements of `type`; every buffer holds at least its count, and the
  // caller keeps ownership. recv() and sendrecv() fail with MpiError if the message that arrives does not hold
  // exactly the expected count (a size disagreement between ranks is a bug, never ignored). Only the receiving
  // rank learns of it: its caller must abort the job (MPI_Abort) rather than return, or the peers wait forever.
  void send(const void* buf, std::size_t count, MPI_Datatype type, int dest, int tag) const;
  void recv(void* buf, std::size_t count, MPI_Datatype type, int source, int tag) const;
  void sendrecv(const void* send_buf, std::size_t send_count, int dest, void* recv_buf, std::size_t recv_count,
                int source, MPI_Datatype type, int tag) const;
  // Collective over this communicator: returns once every rank has called it.
  void barrier() const;

  // `n` consecutive message tags for an object that talks on this communicator; returns the first. Every Comm
  // wrapping the same MPI communicator draws from one counter (an attribute on it), so two objects built on copies
  // of a Comm never share tags. Local (no communication), but every rank must reserve in the same order with the
  // same `n`, as when the objects are constructed collectively; then each object gets the same tags on every rank.
  // Near MPI_TAG_UB the tags wrap (first_reserved_tag): a tag is handed out again only after the whole range
  // (at least 31743 tags, MPI's minimum MPI_TAG_UB) has been, and two objects that hold the same tag must not have
  // messages in flight at the same time (one finishing its operation before the other starts is enough).
  int reserve_tags(int n) const;

  // Element counts in MPI calls are ints; this throws MpiError naming `call` when `count` does not fit.
  int to_int_count(std::size_t count, const char* call) const;

 private:
  Comm(std::shared_ptr<MPI_Comm> handle);
  std::shared_ptr<MPI_Comm> handle_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace gradsync
