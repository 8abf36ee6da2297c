// pingpong: the round-trip time of one message between ranks 0 and 1 (or --peer R), over a sweep of sizes, for
// fitting the alpha-beta cost model (bench/cluster/fit_cost_model.py). Other ranks, if any, wait at the barriers.
// A peer under another switch (ranks filling hosts and switches in order) measures the cost model's far link.
//   mpicxx -O2 -std=c++20 bench/cluster/pingpong.cpp -o build/bin/pingpong     (bench/cluster/build_pingpong.sh)
//   mpirun -n 2 build/bin/pingpong --max-bytes 16M --csv pingpong.csv
// CSV columns: bytes,iters,rtt_us,oneway_us,bw_gbps  (oneway = rtt/2; bw = bytes / oneway, GB/s = 1e9 B/s)
// Each size runs `reps` timed blocks of `iters` round trips; the median block is reported.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kTag = 7;
constexpr double kTargetSecondsPerBlock = 0.05;  // per timed block: enough round trips to beat timer noise
constexpr int kMinIters = 2;
constexpr int kMaxIters = 1000;

struct Options {
  std::size_t min_bytes = 0, max_bytes = std::size_t{16} << 20;
  double step = 2;
  int reps = 5, warmup = 2;
  int peer = 1;
  std::string csv;
};

std::size_t parse_size(const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  const std::string unit = end ? end : "";
  std::size_t scale = 1;
  if (unit == "K")
    scale = std::size_t{1} << 10;
  else if (unit == "M")
    scale = std::size_t{1} << 20;
  else if (unit == "G")
    scale = std::size_t{1} << 30;
  else if (!unit.empty()) {
    std::fprintf(stderr, "pingpong: '%s' is not a size (examples: 0, 4, 1K, 16M)\n", text);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return static_cast<std::size_t>(v) * scale;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--min-bytes" && has_value)
      o.min_bytes = parse_size(argv[++i]);
    else if (a == "--max-bytes" && has_value)
      o.max_bytes = parse_size(argv[++i]);
    else if (a == "--step-factor" && has_value)
      o.step = std::atof(argv[++i]);
    else if (a == "--reps" && has_value)
      o.reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && has_value)
      o.warmup = std::atoi(argv[++i]);
    else if (a == "--peer" && has_value)
      o.peer = std::atoi(argv[++i]);
    else if (a == "--csv" && has_value)
      o.csv = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: pingpong [--min-bytes 0] [--max-bytes 16M] [--step-factor 2] [--reps 5] [--warmup 2] "
                   "[--peer 1] [--csv FILE]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (!(o.step > 1) || o.reps < 1 || o.warmup < 0 || o.max_bytes < o.min_bytes) {
    std::fprintf(stderr, "pingpong: need step-factor > 1, reps >= 1, warmup >= 0, min <= max\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return o;
}

// `iters` round trips from rank 0; seconds per round trip as rank 0 saw it, shared with every rank.
double round_trips(std::vector<char>& buf, std::size_t bytes, int iters, int rank, int peer) {
  const int n = static_cast<int>(bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(buf.data(), n, MPI_BYTE, peer, kTag, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), n, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == peer) {
      MPI_Recv(buf.data(), n, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), n, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
    }
  }
  double seconds = (MPI_Wtime() - start) / iters;
  MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Options o = parse(argc, argv);
  if (size < 2) {
    if (rank == 0) std::fprintf(stderr, "pingpong: needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  if (o.peer < 1 || o.peer >= size) {
    if (rank == 0) std::fprintf(stderr, "pingpong: --peer %d is not a rank from 1 to %d\n", o.peer, size - 1);
    MPI_Finalize();
    return 2;
  }
  if (o.max_bytes > static_cast<std::size_t>(1) << 30) {
    if (rank == 0) std::fprintf(stderr, "pingpong: --max-bytes above 1G is not supported\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<char> buf(std::max<std::size_t>(o.max_bytes, 1), 1);
  std::FILE* out = nullptr;
  if (rank == 0) {
    if (!o.csv.empty() && !(out = std::fopen(o.csv.c_str(), "w"))) {
      std::fprintf(stderr, "pingpong: cannot write %s\n", o.csv.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (out) std::fprintf(out, "bytes,iters,rtt_us,oneway_us,bw_gbps\n");
    std::printf("# pingpong between ranks 0 and %d of %d, median of %d blocks\n", o.peer, size, o.reps);
    std::printf("# %12s %7s %12s %12s %10s\n", "bytes", "iters", "rtt_us", "oneway_us", "GB/s");
  }
  std::vector<std::size_t> sizes;
  if (o.min_bytes == 0) sizes.push_back(0);
  for (double s = std::max<double>(static_cast<double>(o.min_bytes), 1);
       s <= static_cast<double>(o.max_bytes) * 1.0000001; s *= o.step)
    sizes.push_back(static_cast<std::size_t>(s));
  for (const std::size_t bytes : sizes) {
    for (int i = 0; i < o.warmup; ++i) round_trips(buf, bytes, 1, rank, o.peer);
    // One probe round trip sizes the blocks (rank 0 decides; every rank gets the same count).
    const double probe = round_trips(buf, bytes, 1, rank, o.peer);
    int iters = static_cast<int>(
        std::clamp(kTargetSecondsPerBlock / std::max(probe, 1e-7), double{kMinIters}, double{kMaxIters}));
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<double> blocks;
    for (int r = 0; r < o.reps; ++r) blocks.push_back(round_trips(buf, bytes, iters, rank, o.peer));
    std::sort(blocks.begin(), blocks.end());
    const double rtt = blocks[blocks.size() / 2], oneway = rtt / 2;
    if (rank == 0) {
      const double bw = bytes ? static_cast<double>(bytes) / oneway / 1e9 : 0.0;
      std::printf("  %12zu %7d %12.2f %12.2f %10.4f\n", bytes, iters, rtt * 1e6, oneway * 1e6, bw);
      std::fflush(stdout);
      if (out) std::fprintf(out, "%zu,%d,%.3f,%.3f,%.5f\n", bytes, iters, rtt * 1e6, oneway * 1e6, bw);
    }
  }
  if (out) std::fclose(out);
  MPI_Finalize();
  return 0;
}
