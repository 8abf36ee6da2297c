#include "collectives/trace_gather.hpp"

#include <cstdint>
#include <limits>

namespace gradsync {
namespace {

// Rank 0's side of the ping-pongs with `peer`: the estimate from the round with the shortest round trip.
ClockOffset ping(const Comm& comm, int peer, int tag) {
  ClockOffset best{0, std::numeric_limits<double>::infinity()};
  for (int i = 0; i < kClockPingPongs; ++i) {
    double remote = 0;
    const double sent = trace_clock_s();
    comm.send(&sent, 1, MPI_DOUBLE, peer, tag);
    comm.recv(&remote, 1, MPI_DOUBLE, peer, tag);
    const double received = trace_clock_s();
    const double half_round_trip = (received - sent) / 2;
    if (half_round_trip < best.error_s) best = {remote - (sent + received) / 2, half_round_trip};
  }
  return best;
}

}  // namespace

std::vector<ClockOffset> measure_clock_offsets(const Comm& comm) {
  const int tag = comm.reserve_tags(1);
  std::vector<ClockOffset> offsets;
  if (comm.rank() == 0) {
    offsets.resize(static_cast<std::size_t>(comm.size()));
    for (int peer = 1; peer < comm.size(); ++peer) {
      const ClockOffset found = ping(comm, peer, tag);
      offsets[static_cast<std::size_t>(peer)] = found;
      const double estimate[2] = {found.offset_s, found.error_s};
      comm.send(estimate, 2, MPI_DOUBLE, peer, tag);  // so that the peer can put its own times on rank 0's clock
    }
    return offsets;
  }
  for (int i = 0; i < kClockPingPongs; ++i) {
    double sent = 0;
    comm.recv(&sent, 1, MPI_DOUBLE, 0, tag);
    const double now = trace_clock_s();
    comm.send(&now, 1, MPI_DOUBLE, 0, tag);
  }
  double estimate[2] = {0, 0};
  comm.recv(estimate, 2, MPI_DOUBLE, 0, tag);
  offsets.resize(static_cast<std::size_t>(comm.size()));
  offsets[static_cast<std::size_t>(comm.rank())] = {estimate[0], estimate[1]};
  return offsets;
}

std::vector<RankRecords> gather_records(const Comm& comm, const TraceRecorder& recorder) {
  const std::string mine = encode_records(recorder.spans(), recorder.entries());
  const int length = comm.to_int_count(mine.size(), "MPI_Gatherv (trace records)");
  const std::vector<std::int32_t> lengths = comm.gather(length, 0);  // empty except on rank 0
  std::vector<int> offsets(lengths.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = comm.to_int_count(total, "MPI_Gatherv (trace records)");
    total += static_cast<std::size_t>(lengths[r]);
  }
  std::string all(total, '\0');
  check_mpi(
      MPI_Gatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, 0, comm.native()),
      "MPI_Gatherv (trace records)", comm.rank());
  std::vector<RankRecords> records;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    records.push_back(decode_records(
        std::string_view(all).substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r]))));
  return records;
}

}  // namespace gradsync
