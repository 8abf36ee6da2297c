#pragma once
// A small view of an MPI communicator. Every MPI call made through it is checked: a failure becomes an
// MpiError whose message names the call and the rank, instead of Open MPI's default abort.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/mpi_error.hpp"
#include "collectives/mpi_type.hpp"

namespace gradsync {

// MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, request), checked as check_mpi(rc, call, rank) does. A
// simulation build sends from `send_copy` (resized here) instead: SimGrid 3.32 copies an in-place buffer into a
// temporary that it frees on return while its sends still read it, and the sums come out as garbage. `send_copy`
// must outlive the request; other builds leave it untouched. Every rank of `comm` calls it, as MPI_Iallreduce.
void start_iallreduce_in_place(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request,
                               std::vector<std::byte>& send_copy, const char* call, int rank);

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
  // Takes ownership of `comm`, a communicator the caller made (MPIX_Comm_shrink, MPI_Intercomm_merge): freed when
  // the last copy goes away, and revoked by revoke_all() (collectives/fault_tolerance.hpp) while alive.
  static Comm adopt(MPI_Comm comm);

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

  // ---- Typed calls: counts and datatypes come from the buffer (collectives/mpi_type.hpp). Buffers stay the
  // caller's; a failed call throws MpiError naming the call and this rank, as check_mpi does.

  // send() and recv() above, for a whole buffer.
  template <MpiBuffer B>
  void send(const B& data, int dest, int tag) const {
    send(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), dest, tag);
  }
  template <MpiBuffer B>
  void recv(B&& data, int source, int tag) const {
    recv(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), source, tag);
  }

  // Small collectives: flags, counts, texts and statistics. Every rank of this communicator makes the same calls
  // in the same order, with the same `root` and, unless stated, buffers of the same length.

  // MPI_Bcast: every rank's `data` becomes root's.
  template <MpiBuffer B>
  void broadcast(B&& data, int root) const {
    broadcast_raw(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), root);
  }
  // Root's `value`, on every rank.
  template <MpiElement T>
  T broadcast(T value, int root) const {
    broadcast(std::span<T, 1>(&value, 1), root);
    return value;
  }
  // Every rank's `text` becomes root's, whatever length each had: root's length (one int64 broadcast), then its
  // characters (a second broadcast, left out when the text is empty).
  void broadcast_string(std::string& text, int root) const;

  // MPI_Allreduce of one value: the largest, smallest or sum of every rank's `value`, on every rank.
  template <MpiElement T>
  T max(T value) const {
    allreduce_raw(&value, 1, mpi_type_of<T>(), MPI_MAX, "MPI_Allreduce (max)");
    return value;
  }
  template <MpiElement T>
  T min(T value) const {
    allreduce_raw(&value, 1, mpi_type_of<T>(), MPI_MIN, "MPI_Allreduce (min)");
    return value;
  }
  template <MpiElement T>
  T sum(T value) const {
    allreduce_raw(&value, 1, mpi_type_of<T>(), MPI_SUM, "MPI_Allreduce (sum)");
    return value;
  }
  // MPI_Allreduce in place, element by element: every rank's `values` becomes the elementwise max or sum.
  template <MpiBuffer B>
  void max_in_place(B&& values) const {
    allreduce_raw(std::ranges::data(values), std::ranges::size(values), mpi_type_of<MpiBufferElement<B>>(), MPI_MAX,
                  "MPI_Allreduce (max)");
  }
  template <MpiBuffer B>
  void sum_in_place(B&& values) const {
    allreduce_raw(std::ranges::data(values), std::ranges::size(values), mpi_type_of<MpiBufferElement<B>>(), MPI_SUM,
                  "MPI_Allreduce (sum)");
  }
  // MPI_Reduce in place at `root`: root's `values` becomes the elementwise sum or max over ranks; the other ranks'
  // are only read.
  template <MpiBuffer B>
  void sum_to(int root, B&& values) const {
    reduce_raw(std::ranges::data(values), std::ranges::size(values), mpi_type_of<MpiBufferElement<B>>(), MPI_SUM, root,
               "MPI_Reduce (sum)");
  }
  template <MpiBuffer B>
  void max_to(int root, B&& values) const {
    reduce_raw(std::ranges::data(values), std::ranges::size(values), mpi_type_of<MpiBufferElement<B>>(), MPI_MAX, root,
               "MPI_Reduce (max)");
  }

  // MPI_Gather: root gets every rank's `mine` one after another in rank order (size() times its length); the other
  // ranks get an empty vector.
  template <MpiBuffer B>
  std::vector<MpiBufferElement<B>> gather(const B& mine, int root) const {
    const std::size_t n = std::ranges::size(mine);
    std::vector<MpiBufferElement<B>> all(rank_ == root ? n * static_cast<std::size_t>(size_) : 0);
    gather_raw(std::ranges::data(mine), n, all.data(), mpi_type_of<MpiBufferElement<B>>(), root);
    return all;
  }
  // Root gets one `value` from each rank, in rank order; the other ranks get an empty vector.
  template <MpiElement T>
  std::vector<T> gather(T value, int root) const {
    return gather(std::span<const T, 1>(&value, 1), root);
  }
  // MPI_Allgather: every rank gets every rank's `mine`, one after another in rank order.
  template <MpiBuffer B>
  std::vector<MpiBufferElement<B>> all_gather(const B& mine) const {
    const std::size_t n = std::ranges::size(mine);
    std::vector<MpiBufferElement<B>> all(n * static_cast<std::size_t>(size_));
    all_gather_raw(std::ranges::data(mine), n, all.data(), mpi_type_of<MpiBufferElement<B>>());
    return all;
  }
  // Texts of any length (their total below 2^31 characters): root gets every rank's `mine` concatenated in rank
  // order (MPI_Gather of the lengths, then MPI_Gatherv); the other ranks get "".
  std::string gather_strings(std::string_view mine, int root) const;

  // Nonblocking point-to-point. isend() and irecv() post one message of the whole buffer and return its request;
  // the buffer must stay alive, and untouched (isend) or unread (irecv), until a wait or test below has completed
  // the request. A message longer than irecv's buffer fails its wait (MPI_ERR_TRUNCATE); a shorter one is not
  // detected. A failure names the call, the peer and the tag.
  template <MpiBuffer B>
  MPI_Request isend(const B& data, int dest, int tag) const {
    return isend_raw(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), dest, tag);
  }
  // isend's synchronous mode (MPI_Issend): its wait completes only once `dest` has matched the message with a
  // receive, so that a sender that goes on to tell others about the data knows its receiver holds it (chain
  // replication: trainers/families/ps/).
  template <MpiBuffer B>
  MPI_Request issend(const B& data, int dest, int tag) const {
    return issend_raw(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), dest, tag);
  }
  template <MpiBuffer B>
  MPI_Request irecv(B&& data, int source, int tag) const {
    return irecv_raw(std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>(), source, tag);
  }
  // Completion of requests this process posted (on any communicator); only the calling rank takes part. `what`
  // names them in a failure: "MPI_Waitall (<what>) failed on rank 3: ...". A completed request becomes
  // MPI_REQUEST_NULL, and a null request counts as complete.
  void wait(MPI_Request& request, const char* what) const;
  void wait_all(std::span<MPI_Request> requests, const char* what) const;
  // True, with all of `requests` completed, if every one has finished; false, with none of them completed, if not.
  bool test_all(std::span<MPI_Request> requests, const char* what) const;
  // Blocks until one of `requests` finishes, completes it and returns its index; returns -1 at once when every
  // one is null.
  int wait_any(std::span<MPI_Request> requests, const char* what) const;

  // Element counts in MPI calls are ints; this throws MpiError naming `call` when `count` does not fit.
  int to_int_count(std::size_t count, const char* call) const;

 private:
  Comm(std::shared_ptr<MPI_Comm> handle);
  // The typed calls' bodies, one per MPI call; counts are in elements of `type`.
  void broadcast_raw(void* data, std::size_t count, MPI_Datatype type, int root) const;
  void allreduce_raw(void* data, std::size_t count, MPI_Datatype type, MPI_Op op, const char* call) const;
  void reduce_raw(void* data, std::size_t count, MPI_Datatype type, MPI_Op op, int root, const char* call) const;
  void gather_raw(const void* mine, std::size_t count, void* all, MPI_Datatype type, int root) const;
  void all_gather_raw(const void* mine, std::size_t count, void* all, MPI_Datatype type) const;
  MPI_Request isend_raw(const void* data, std::size_t count, MPI_Datatype type, int dest, int tag) const;
  MPI_Request issend_raw(const void* data, std::size_t count, MPI_Datatype type, int dest, int tag) const;
  MPI_Request irecv_raw(void* data, std::size_t count, MPI_Datatype type, int source, int tag) const;

  std::shared_ptr<MPI_Comm> handle_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace gradsync
