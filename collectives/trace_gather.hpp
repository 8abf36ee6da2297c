#pragma once
// The MPI side of tracing: aligning the ranks' clocks and bringing every rank's trace records to rank 0. The recorder
// itself (trace/recorder.hpp) knows nothing about MPI.
#include <vector>

#include "collectives/comm.hpp"
#include "trace/gathered_trace.hpp"
#include "trace/recorder.hpp"

namespace gradsync {

// Ping-pongs rank 0 exchanges with each other rank to estimate its clock offset.
inline constexpr int kClockPingPongs = 16;

// Collective over `comm`. Rank 0 exchanges kClockPingPongs ping-pongs with every other rank in turn, reading
// trace_clock_s() on both sides; the round with the shortest round trip gives the offset (the remote reading minus
// the midpoint of rank 0's send and receive) and its error bound (half that round trip), which rank 0 then sends
// the peer. One entry per rank on every rank: complete on rank 0 (rank 0's is zero); elsewhere only the rank's own
// entry is filled (the others are zero).
std::vector<ClockOffset> measure_clock_offsets(const Comm& comm);

// Collective over `comm`: every rank's spans and collective entries (recorder.spans(), recorder.entries()), on rank 0
// indexed by rank; other ranks get an empty vector. One MPI_Gather of the sizes and one MPI_Gatherv of the bytes.
std::vector<RankRecords> gather_records(const Comm& comm, const TraceRecorder& recorder);

}  // namespace gradsync
