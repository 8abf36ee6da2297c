#include "collectives/agreement.hpp"

#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "collectives/watchdog.hpp"

namespace gradsync {
namespace {

constexpr int kFields = 4;

std::array<std::int64_t, kFields> as_fields(const CallFingerprint& f) {
  return {static_cast<std::int64_t>(f.method), static_cast<std::int64_t>(f.count), static_cast<std::int64_t>(f.dtype),
          static_cast<std::int64_t>(f.sequence)};
}

}  // namespace

std::uint64_t fingerprint_of_name(std::string_view name) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h >> 1;  // keep it positive as int64
}

void check_agreement(const Comm& comm, std::string_view what, const CallFingerprint& mine) {
  if (comm.size() == 1) return;
  // max(x) and max(-x) in one reduction: all ranks agree iff max(x) == -max(-x) == min(x) for every field.
  const auto fields = as_fields(mine);
  std::array<std::int64_t, 2 * kFields> extremes;
  for (int i = 0; i < kFields; ++i) {
    extremes[i] = fields[i];
    extremes[kFields + i] = -fields[i];
  }
  const WaitScope wait("MPI_Allreduce (agreement check before a collective)");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, extremes.data(), 2 * kFields, MPI_INT64_T, MPI_MAX, comm.native()),
            "MPI_Allreduce (agreement check)", comm.rank());
  bool agree = true;
  for (int i = 0; i < kFields; ++i) agree = agree && extremes[i] == -extremes[kFields + i];
  if (agree) return;

  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()) * kFields);
  check_mpi(MPI_Allgather(fields.data(), kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, comm.native()),
            "MPI_Allgather (agreement check)", comm.rank());
  std::string detail;
  for (int r = 0; r < comm.size(); ++r) {
    const std::int64_t* f = &all[static_cast<std::size_t>(r) * kFields];
    const bool known_type = f[2] >= 0 && f[2] <= static_cast<std::int64_t>(Dtype::i64);
    detail += fmt::format("{}rank {}: {} x {} (call {}{})", r ? ", " : "", r, f[1],
                          known_type ? dtype_name(static_cast<Dtype>(f[2])) : "?", f[3],
                          f[0] == fields[0] ? "" : ", other method or options");
  }
  throw MismatchError(fmt::format("{} allreduce: ranks disagree on what to reduce: {}", what, detail));
}

}  // namespace gradsync
