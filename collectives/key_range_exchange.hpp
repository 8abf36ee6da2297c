#pragma once
// The parameter server's exchange, written once, in ps-lite's vocabulary. Ranks 0..servers-1 of a communicator
// serve; server s owns key range s, partition(count, servers, s), of a flat buffer of `count` elements. A worker
// pushes each server its key range (or an encoding of it) and pulls the server's answer back into the same range;
// a server receives one push from every pushing rank, folds them in rank order (so that sums are reproducible) and
// answers each. Both the ps allreduce methods (collectives/ps_allreduce.hpp) and the parameter-server trainer
// (trainers/families/ps/) talk through it: what is theirs is what a server does between the pushes and the answers (a
// sum, an optimizer step), and when it answers (at once, after every push, after a staleness bound).
//
// Planned once, run many times: two tags reserved on the communicator, two requests per server on the worker side
// (push and pull, in flight together), one per pushing rank on the server side (its push, then the answer to it),
// and an inbox of one key range per pushing rank that grows to the largest range and never shrinks. Nothing is
// allocated per step. Every call is nonblocking unless it says otherwise; the requests it fills are completed by the
// caller (Comm::wait_all and friends, or an Allreduce's stages), which must keep the buffers alive until then.
#include <mpi.h>

#include <cstddef>
#include <ranges>
#include <span>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"
#include "collectives/dtype.hpp"
#include "collectives/mpi_type.hpp"
#include "collectives/scratch_bytes.hpp"

namespace gradsync {

class KeyRangeExchange {
 public:
  // Reserves two tags on `comm` (Comm::reserve_tags: every rank builds its exchanges in the same order; a worker's
  // and a server's exchange on one communicator then hold the same tags). The pushing ranks are the non-servers, and
  // with `servers_push` the servers as well. servers >= 1, else std::invalid_argument; that enough ranks are left to
  // push is the caller's check.
  KeyRangeExchange(Comm comm, int servers, bool servers_push);

  const Comm& comm() const { return comm_; }
  int servers() const { return servers_; }
  bool is_server(int rank) const { return rank < servers_; }
  ElementRange key_range(std::size_t count, int server) const {
    return partition(count, static_cast<std::size_t>(servers_), static_cast<std::size_t>(server));
  }
  // The pushing ranks are pusher_rank(0) < pusher_rank(1) < ..., contiguous up to the communicator's last rank; their
  // index is the slot of their push in a server's inbox and of their request on the server side.
  int pushers() const { return comm_.size() - first_pusher_; }
  bool pushes(int rank) const { return rank >= first_pusher_; }
  int pusher_rank(int i) const { return first_pusher_ + i; }
  int pusher_index(int rank) const { return rank - first_pusher_; }

  // ---- Worker side: requests push_request(s) and pull_request(s), for every server s.

  // Posts the push of `n` elements of `type` at `data` to `server` (metered: collectives/wire_meter.hpp).
  void push(int server, const void* data, std::size_t n, MPI_Datatype type);
  // Posts the pull of `server`'s answer, `n` elements of `type`, into `data`.
  void pull(int server, void* data, std::size_t n, MPI_Datatype type);
  template <MpiBuffer B>
  void push(int server, const B& data) {
    push(server, std::ranges::data(data), std::ranges::size(data), mpi_type_of<MpiBufferElement<B>>());
  }
  // Every server's key range of the whole buffer `data` (`count` elements of `type`), pushed from it or pulled into
  // it; a server that is this rank itself is left out (its request stays null).
  void push_ranges(const std::byte* data, std::size_t count, Dtype type);
  void pull_ranges(std::byte* data, std::size_t count, Dtype type);
  template <class T>
  void push_ranges(std::span<const T> data) {
    push_ranges(reinterpret_cast<const std::byte*>(data.data()), data.size(), dtype_of<T>());
  }
  template <class T>
  void pull_ranges(std::span<T> data) {
    pull_ranges(reinterpret_cast<std::byte*>(data.data()), data.size(), dtype_of<T>());
  }
  MPI_Request& push_request(int server) { return worker_requests_[2 * static_cast<std::size_t>(server) + 1]; }
  MPI_Request& pull_request(int server) { return worker_requests_[2 * static_cast<std::size_t>(server)]; }
  // Both of `server`'s requests (pull, then push), or every server's.
  std::span<MPI_Request> requests_of(int server) {
    return std::span(worker_requests_).subspan(2 * static_cast<std::size_t>(server), 2);
  }
  std::span<MPI_Request> worker_requests() { return worker_requests_; }

  // ---- Server side: request pusher_request(i) for the push of pusher i, then for the answer to it.

  // The inbox holds one slot of `slot_bytes` per pusher from now on (grown, never shrunk; contents not kept).
  void plan_inbox(std::size_t slot_bytes);
  std::byte* slot(int i) { return inbox_.data() + slot_bytes_ * static_cast<std::size_t>(i); }
  template <class T>
  std::span<T> slot_as(int i, std::size_t n) {
    return {reinterpret_cast<T*>(slot(i)), n};
  }
  // Posts the receive of pusher i's push: `n` elements of `type` into `data`, or into its inbox slot.
  void receive(int i, void* data, std::size_t n, MPI_Datatype type);
  void receive_into_slot(int i, std::size_t n, Dtype type) { receive(i, slot(i), n, mpi_type(type)); }
  // Adds pusher i's slot into `sum`, `n` elements of `type`; pusher 0's is copied (unless `sum` is its slot). Called
  // for i = 0, 1, ... in order, it leaves the sum in rank order, whatever order the pushes arrived in.
  void fold(int i, std::byte* sum, std::size_t n, Dtype type);
  // Posts the answer to pusher i: `n` elements of `type` at `data` (metered). answer_all answers every pusher but
  // this rank itself, each from the same buffer; answer_now sends and returns once the buffer may be reused.
  void answer(int i, const void* data, std::size_t n, MPI_Datatype type);
  void answer_all(const void* data, std::size_t n, MPI_Datatype type);
  void answer_now(int i, const void* data, std::size_t n, MPI_Datatype type);
  MPI_Request& pusher_request(int i) { return pusher_requests_[static_cast<std::size_t>(i)]; }
  std::span<MPI_Request> pusher_requests() { return pusher_requests_; }

 private:
  Comm comm_;
  int servers_;
  int first_pusher_;
  int push_tag_, pull_tag_;
  std::vector<MPI_Request> worker_requests_;  // 2 per server: pull, push
  std::vector<MPI_Request> pusher_requests_;  // 1 per pusher
  ScratchBytes inbox_;
  std::size_t slot_bytes_ = 0;
};

}  // namespace gradsync
