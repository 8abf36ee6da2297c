#pragma once
// Before data moves, every rank of a collective must agree on what is being reduced. A rank that calls with a
// different count or type would otherwise hang its neighbours or corrupt their buffers; this check turns that
// into an error on every rank, naming each rank and what it passed.
#include <cstddef>
#include <cstdint>
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

// The same check split for nonblocking collectives: start() posts the reduction (MPI_Iallreduce) and returns;
// once request() has completed (the caller waits or tests it, with other work in between), verify() throws
// MismatchError on every rank if the fingerprints differ. Every rank of `comm` calls start() and verify() in the
// same order as its other collectives on `comm`. The object must stay alive and in place from start() until
// verify() (MPI writes into it); it allocates nothing unless the check fails.
class PendingAgreement {
 public:
  void start(const Comm& comm, const CallFingerprint& mine);
  // start() and its completion in one blocking MPI_Allreduce (cheaper than the nonblocking pair when nothing else
  // is to be done meanwhile); verify() follows as after start().
  void reduce_now(const Comm& comm, const CallFingerprint& mine);
  MPI_Request* request() { return &request_; }
  // After request() completed. verify() on a mismatch is itself collective (it gathers every rank's fingerprint
  // to name them), which is safe: every rank saw the same reduced fields, so all of them make that call.
  void verify(const Comm& comm, std::string_view what) const;

 private:
  void load(const CallFingerprint& mine);
  static constexpr int kFields = 4;
  std::int64_t mine_[kFields] = {};
  std::int64_t extremes_[2 * kFields] = {};
  std::vector<std::byte> send_copy_;  // start_iallreduce_in_place's, in a simulation build
  MPI_Request request_ = MPI_REQUEST_NULL;
};

// A stable 64-bit hash of a method name (FNV-1a), the same on every rank and build: the `method` field of a
// CallFingerprint.
std::uint64_t fingerprint_of_name(std::string_view name);

}  // namespace gradsync
