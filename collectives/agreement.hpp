#pragma once
// Before data moves, every rank of a collective must agree on what is being reduced. A rank that calls with a
// different count or type would otherwise hang its neighbours or corrupt their buffers; this check turns that
// into an error on every rank, naming each rank and what it passed.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>

#include "collectives/comm.hpp"
#include "collectives/dtype.hpp"

namespace gradsync {

struct MismatchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CallFingerprint {
  std::uint64_t method = 0;  // which collective and how it is planned (hash of name and options)
  std::uint64_t count = 0;
  std::uint64_t dtype = 0;
  std::uint64_t sequence = 0;  // how many calls this collective object made before this one
};

// Collective: every rank of `comm` must call it. Costs one MPI_Allreduce of 8 int64 values. If the
// fingerprints differ, gathers them and throws MismatchError on every rank with a message such as
// "ring allreduce: ranks disagree: rank 0: 1000 x float (call 3), rank 2: 999 x float (call 3)".
// `what` names the collective (e.g. "ring") and is only formatted on a mismatch: a call allocates nothing.
void check_agreement(const Comm& comm, std::string_view what, const CallFingerprint& mine);

// The same check split for nonblocking collectives, on gradsync's own messages: a dissemination maximum, in which
// round k sends this rank's extremes so far to rank + 2^k and takes the maximum with those from rank - 2^k. A
// maximum does not mind seeing a rank twice, so ceil(log2 P) rounds reach every rank on any P, with no folding.
// (MPI_Iallreduce did this before; SMPI's sends every rank's buffer to every rank, P^2 messages per call, which is
// what made simulated overlapped runs slow and their checks expensive.)
// start() posts the first round on `tag` and returns; each time requests() have completed (the caller waits or
// tests them, with other work in between), advance() folds in what arrived and posts the next round, until it
// returns true; then verify() throws MismatchError on every rank if the fingerprints differ. Every rank of `comm`
// calls these in the same order as its other collectives on `comm`; `tag` is the caller's alone on `comm`. The
// object must stay alive and in place from start() until verify() (MPI reads and writes its buffers); it
// allocates nothing unless the check fails.
class PendingAgreement {
 public:
  void start(const Comm& comm, const CallFingerprint& mine, int tag);
  // The current round's send and receive (MPI_REQUEST_NULL once done).
  std::span<MPI_Request> requests() { return requests_; }
  bool advance(const Comm& comm);
  // The whole check in one blocking MPI_Allreduce (cheaper than the rounds when nothing else is to be done
  // meanwhile); verify() follows as after the last round.
  void reduce_now(const Comm& comm, const CallFingerprint& mine);
  // After the last round. verify() on a mismatch is itself collective (it gathers every rank's fingerprint to name
  // them), which is safe: every rank saw the same reduced fields, so all of them make that call.
  void verify(const Comm& comm, std::string_view what) const;

 private:
  void load(const CallFingerprint& mine);
  void post_round(const Comm& comm);
  static constexpr int kFields = 4;
  std::int64_t mine_[kFields] = {};
  std::int64_t extremes_[2 * kFields] = {};
  std::int64_t outgoing_[2 * kFields] = {};  // this round's send: extremes_ as they were when it was posted
  std::int64_t incoming_[2 * kFields] = {};
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int distance_ = 0;  // this round's: 1, 2, 4, ... while below P
  int tag_ = 0;
};

// A stable 64-bit hash of a method name (FNV-1a), the same on every rank and build: the `method` field of a
// CallFingerprint.
std::uint64_t fingerprint_of_name(std::string_view name);

}  // namespace gradsync
