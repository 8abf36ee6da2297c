#include "collectives/agreement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "collectives/watchdog.hpp"

namespace gradsync {

std::uint64_t fingerprint_of_name(std::string_view name) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h >> 1;  // keep it positive as int64
}

// max(x) and max(-x) in one reduction: all ranks agree iff max(x) == -max(-x) == min(x) for every field.
void PendingAgreement::load(const CallFingerprint& f) {
  const std::int64_t fields[kFields] = {static_cast<std::int64_t>(f.method), static_cast<std::int64_t>(f.count),
                                        static_cast<std::int64_t>(f.dtype), static_cast<std::int64_t>(f.sequence)};
  for (int i = 0; i < kFields; ++i) {
    mine_[i] = fields[i];
    extremes_[i] = fields[i];
    extremes_[kFields + i] = -fields[i];
  }
  requests_[0] = requests_[1] = MPI_REQUEST_NULL;
}

void PendingAgreement::start(const Comm& comm, const CallFingerprint& mine, int tag) {
  load(mine);
  tag_ = tag;
  distance_ = 1;
  if (comm.size() > 1) post_round(comm);
}

void PendingAgreement::post_round(const Comm& comm) {
  const int p = comm.size(), me = comm.rank();
  std::copy(std::begin(extremes_), std::end(extremes_), std::begin(outgoing_));
  requests_[1] = comm.irecv(std::span<std::int64_t>(incoming_), (me - distance_ % p + p) % p, tag_);
  requests_[0] = comm.isend(std::span<const std::int64_t>(outgoing_), (me + distance_) % p, tag_);
}

bool PendingAgreement::advance(const Comm& comm) {
  for (int i = 0; i < 2 * kFields; ++i) extremes_[i] = std::max(extremes_[i], incoming_[i]);
  distance_ *= 2;
  if (distance_ >= comm.size()) return true;
  post_round(comm);
  return false;
}

void PendingAgreement::reduce_now(const Comm& comm, const CallFingerprint& mine) {
  load(mine);
  if (comm.size() == 1) return;
  const WaitScope wait("MPI_Allreduce (agreement check before a collective)");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, extremes_, 2 * kFields, MPI_INT64_T, MPI_MAX, comm.native()),
            "MPI_Allreduce (agreement check)", comm.rank());
}

void PendingAgreement::verify(const Comm& comm, std::string_view what) const {
  bool agree = true;
  for (int i = 0; i < kFields; ++i) agree = agree && extremes_[i] == -extremes_[kFields + i];
  if (agree) return;

  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()) * kFields);
  check_mpi(MPI_Allgather(mine_, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, comm.native()),
            "MPI_Allgather (agreement check)", comm.rank());
  std::string detail;
  for (int r = 0; r < comm.size(); ++r) {
    const std::int64_t* f = &all[static_cast<std::size_t>(r) * kFields];
    const bool known_type = f[2] >= 0 && f[2] <= static_cast<std::int64_t>(Dtype::i64);
    detail += fmt::format("{}rank {}: {} x {} (call {}{})", r ? ", " : "", r, f[1],
                          known_type ? dtype_name(static_cast<Dtype>(f[2])) : "?", f[3],
                          f[0] == mine_[0] ? "" : ", other method or options");
  }
  throw MismatchError(fmt::format("{} allreduce: ranks disagree on what to reduce: {}", what, detail));
}

void check_agreement(const Comm& comm, std::string_view what, const CallFingerprint& mine) {
  if (comm.size() == 1) return;
  PendingAgreement check;
  check.reduce_now(comm, mine);
  check.verify(comm, what);
}

}  // namespace gradsync
