#pragma once
// Traffic accounting for tests: a layer on MPI's profiling interface (PMPI) that records every message and every
// collective this process starts while a Recording is alive. Tests use it to check how a method reached its result
// (whom it talked to, how many bytes, which collectives), not just the result: a "ring" that secretly called
// MPI_Allreduce, or sent the whole buffer at every step, would reach the right sum and still fail.
//
// Linked into the test binary only (tests/CMakeLists.txt compiles traffic.cpp into it): its MPI_Send, MPI_Isend, ...
// replace the MPI library's for every caller in that binary and forward to PMPI_Send, ... Outside a Recording they
// only forward. Works with any MPI that has the standard profiling interface (Open MPI, MPICH).
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"

namespace gradsync::traffic {

// The rank in MPI_COMM_WORLD of rank `rank` of `comm`, the numbering Message::peer uses. Local.
int world_rank_of(const Comm& comm, int rank);

// One point-to-point message as the sender or receiver posted it. `peer` is the other side's rank in
// MPI_COMM_WORLD (translated from the communicator's), `bytes` the count times the datatype's size as posted
// (for a receive, the largest message it accepts).
struct Message {
  std::string call;  // "MPI_Send", "MPI_Isend", "MPI_Sendrecv", ...
  int peer = -1;
  int tag = 0;
  std::size_t bytes = 0;
};

// One collective call (blocking or nonblocking) and its send buffer's size in bytes (count times the datatype's size).
struct Collective {
  std::string call;  // "MPI_Allreduce", "MPI_Iallreduce", "MPI_Barrier", ...
  std::size_t bytes = 0;
};

// While one is alive, this process's MPI calls are recorded into it (one at a time per process; the calls must come
// from the thread that created it or be serialized with it, as MPI_THREAD_SERIALIZED requires anyway). Local: no
// communication. Nesting throws std::logic_error.
class Recording {
 public:
  Recording();
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  std::vector<Message> sends, receives;
  std::vector<Collective> collectives;

  std::size_t bytes_sent() const;
  std::size_t bytes_sent_to(int peer) const;
  std::size_t bytes_received_from(int peer) const;
  // The distinct world ranks this process sent to / received from, ascending.
  std::vector<int> send_peers() const;
  std::vector<int> receive_peers() const;
  // How many collectives named `call` were recorded.
  std::size_t collective_count(const std::string& call) const;
};

// The elements rank `r` of a ring of `p` sends on `count`, in whole segments: the reduce-scatter sends segments
// r, r-1, ..., the all-gather r+1, r, ... (P-1 each). The closed form the ring's traffic is checked against.
inline std::size_t ring_elements_sent(std::size_t count, int p, int r) {
  std::size_t sent = 0;
  for (int step = 0; step < p - 1; ++step) {
    sent += partition(count, p, static_cast<std::size_t>((r - step + 2 * p) % p)).size();
    sent += partition(count, p, static_cast<std::size_t>((r + 1 - step + 2 * p) % p)).size();
  }
  return sent;
}

}  // namespace gradsync::traffic
