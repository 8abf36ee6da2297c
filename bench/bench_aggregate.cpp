// bench_aggregate: time per robust aggregation (collectives/robust/) against the ring allreduce, each aggregator in
// its segmented form (the ring's bytes) and gathered to one rank (rank 0 receives p - 1 whole vectors), 1-64 MiB.
// One driver; each row is a small object (bench/aggregate_methods.hpp). Rows have bench_allreduce's CSV columns
// (docs: /work/shared/DESIGN.md "Output formats"), so its charts and scripts read them; chunk_bytes is 0, and busbw
// counts the ring's 2 (p - 1) / p of the vector for every row, what the segmented form sends.
//   mpirun -n 8 build/bin/bench_aggregate --aggregators median,krum,bulyan --byzantine 1 --csv out.csv
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/aggregate_methods.hpp"
#include "bench/bench_options.hpp"
#include "bench/flags/bench_aggregate_flags.hpp"
#include "collectives/comm.hpp"

namespace {

using namespace gradsync;
using bench::AggregateMethod;

constexpr const char* kAggregateCsvHeader = "method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong";

struct AggregateRow {
  std::string label;
  int np = 0;
  std::size_t bytes = 0, count = 0;
  double time_us = 0, algbw = 0, busbw = 0;
  long wrong = -1;  // -1: not checked (--no-check)
};

// One timed call on fresh inputs, all ranks starting together: the slowest rank's time.
double time_call(AggregateMethod& method, std::span<float> data, const Comm& world) {
  method.fill(data);
  world.barrier();
  const double start = MPI_Wtime();
  method.run(data);
  std::array<double, 1> seconds{MPI_Wtime() - start};
  world.max_in_place(seconds);
  return seconds[0];
}

// Every rank: one row. Rows run one after another, each method built and freed in turn rather than interleaved as
// bench_allreduce's are: every gathered form's root holds p whole vectors, which p = 256 simulated ranks in one
// process could not keep for every aggregator at once.
AggregateRow measure(const bench::AggregateMethodMaker& make, std::span<float> data, const bench::AggregateFlags& f,
                     const Comm& world) {
  const std::unique_ptr<AggregateMethod> method = make(world);
  AggregateRow row{method->label(), world.size(), data.size() * sizeof(float), data.size()};
  if (!f.no_check) row.wrong = method->count_wrong(data);
  for (int i = 0; i < f.warmup; ++i) {
    method->fill(data);
    method->run(data);
  }
  std::vector<double> calls;
  for (int rep = 0; rep < f.reps; ++rep) calls.push_back(time_call(*method, data, world));
  std::sort(calls.begin(), calls.end());
  const double seconds = calls[calls.size() / 2];
  const int p = world.size();
  row.time_us = seconds * 1e6;
  row.algbw = static_cast<double>(row.bytes) / seconds / 1e9;
  row.busbw = row.algbw * 2.0 * (p - 1) / p;
  return row;
}

// Rank 0 only: one row to stdout and, if open, to the CSV.
void print_aggregate_row(const AggregateRow& r, std::FILE* out) {
  fmt::print("  {:>22} {:>4} {:>10} {:>9} {:>12.1f} {:>8.3f} {:>8.3f} {:>6}\n", r.label, r.np, r.bytes, r.count,
             r.time_us, r.algbw, r.busbw, r.wrong);
  std::fflush(stdout);
  if (out)
    fmt::print(out, "{},{},{},{},0,{:.3f},{:.4f},{:.4f},{}\n", r.label, r.np, r.bytes, r.count, r.time_us, r.algbw,
               r.busbw, r.wrong);
}

// Every rank, after a successful parse: the whole benchmark. Returns the exit code: 1 if any element was wrong.
int run_benchmark(const bench::AggregateFlags& f, const Comm& world) {
  const std::size_t lo = bench::parse_bytes(f.min_bytes, "--min-bytes");
  const std::size_t hi = bench::parse_bytes(f.max_bytes, "--max-bytes");
  if (lo < sizeof(float) || hi < lo) throw std::invalid_argument("--min-bytes/--max-bytes: need 4 <= min <= max");
  if (!(f.step_factor > 1)) throw std::invalid_argument("--step-factor: must be > 1");
  if (f.reps < 1 || f.warmup < 0) throw std::invalid_argument("--reps must be >= 1 and --warmup >= 0");
  const std::vector<bench::AggregateMethodMaker> makers =
      bench::aggregate_methods(f.aggregators, f.forms, f.byzantine, !f.no_ring, world);
  const bool lead = world.rank() == 0;
  std::FILE* out = lead && !f.csv.empty() ? std::fopen(f.csv.c_str(), "w") : nullptr;
  if (!world.all_ok(!lead || f.csv.empty() || out))
    throw std::invalid_argument(fmt::format("--csv {}: rank 0 cannot open it for writing", f.csv));
  if (out) fmt::print(out, "{}\n", kAggregateCsvHeader);
  if (lead) {
#ifdef GRADSYNC_SIMULATED
    const char* note = " (simulated ranks: times are SimGrid's simulated clock)";
#else
    const char* note = world.size() > 2 ? " (np > 2 is oversubscribed on a 2-core machine: timings are not honest)" : "";
#endif
    fmt::print("# bench_aggregate: {} ranks, {} Byzantine, float32, median of {} call(s){}\n", world.size(), f.byzantine,
               f.reps, note);
    fmt::print("# {:>20} {:>4} {:>10} {:>9} {:>12} {:>8} {:>8} {:>6}\n", "method", "np", "bytes", "count", "time_us",
               "algbw", "busbw", "#wrong");
  }
  std::vector<float> data(hi / sizeof(float));
  long total_wrong = 0;
  for (double size = static_cast<double>(lo); size <= static_cast<double>(hi) * 1.0000001; size *= f.step_factor) {
    const std::span<float> buffer = std::span<float>(data).first(static_cast<std::size_t>(size) / sizeof(float));
    for (const bench::AggregateMethodMaker& make : makers) {
      const AggregateRow row = measure(make, buffer, f, world);
      total_wrong += std::max(row.wrong, 0L);
      if (lead) print_aggregate_row(row, out);
    }
  }
  if (out) std::fclose(out);
  if (lead && !f.no_check) fmt::print("# {} wrong element(s) in total{}\n", total_wrong, total_wrong ? ": BUG" : "");
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Comm world = Comm::world();
  const bool lead = world.rank() == 0;
  bench::AggregateFlags f;
  if (const std::optional<int> done = bench::parse_aggregate_flags(argc, argv, lead, f)) {
    MPI_Finalize();
    return *done;
  }
  int code = 0;
  try {
    code = run_benchmark(f, world);
  } catch (const std::invalid_argument& e) {
    // Bad flags or an aggregator this rank count refuses: every rank finds the same problem and all leave together.
    if (lead) fmt::print(stderr, "bench_aggregate: error: {}\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    // Anything else may be this rank's alone, with the others inside a collective: stop them all.
    fmt::print(stderr, "bench_aggregate: error on rank {}: {}\n", world.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}
