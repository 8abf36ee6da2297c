// bench_membw: memory bandwidth with every rank busy at once (run it under mpirun -n <cores>). The ring
// allreduce on shared memory is bound by memory traffic, so its busbw is judged against this number.
//   mpirun -n 2 build/bin/bench_membw --bytes 256M
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/flags/bench_membw_flags.hpp"
#include "collectives/comm.hpp"
#include "collectives/dtype.hpp"

namespace {

// Median of `reps` timed runs of `kernel`, all ranks starting together; returns the max over ranks.
template <class Kernel>
double timed(const gradsync::Comm& world, int reps, Kernel kernel) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    world.barrier();
    const double start = MPI_Wtime();
    kernel();
    double s = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, world.native());
    t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const gradsync::Comm world = gradsync::Comm::world();
  gradsync::bench::MembwFlags f;
  if (const std::optional<int> done = gradsync::bench::parse_membw_flags(argc, argv, world.rank() == 0, f)) {
    MPI_Finalize();
    return *done;
  }
  const int reps = f.reps;
  std::size_t bytes = 0;
  try {
    bytes = gradsync::bench::parse_bytes(f.bytes, "--bytes");
  } catch (const std::invalid_argument& e) {  // every rank reads the same flag: all leave, rank 0 says why
    if (world.rank() == 0) fmt::print(stderr, "bench_membw: error: {}\n", e.what());
    MPI_Finalize();
    return 2;
  }
  const std::size_t n = bytes / sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  const double copy_s = timed(world, reps, [&] { std::memcpy(a.data(), b.data(), n * sizeof(float)); });
  const double add_s = timed(world, reps, [&] { gradsync::add_into(a.data(), b.data(), n); });
  const double p = world.size(), moved = static_cast<double>(bytes);
  if (world.rank() == 0) {
    // Bytes the kernels must move: copy reads and writes n floats; add reads two arrays and writes one.
    // (Write-allocate traffic is not counted, as in STREAM.)
    fmt::print("bench_membw: {} rank(s) running at once, {} per array per rank, median of {}\n", world.size(),
               gradsync::bench::human_bytes(bytes), reps);
    fmt::print("  copy: {:6.2f} GB/s aggregate ({:.2f} per rank)\n", p * 2 * moved / copy_s / 1e9,
               2 * moved / copy_s / 1e9);
    fmt::print("  add : {:6.2f} GB/s aggregate ({:.2f} per rank)\n", p * 3 * moved / add_s / 1e9,
               3 * moved / add_s / 1e9);
  }
  MPI_Finalize();
  return 0;
}
