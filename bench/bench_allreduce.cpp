// bench_allreduce: allreduce time and bandwidth per method and message size, nccl-tests style. One driver;
// each method is a small descriptor (name + options). Every row carries its own exact correctness count.
//   mpirun -n 2 build/bin/bench_allreduce --methods ring,ps,mpi --min-bytes 4 --max-bytes 64M --csv out.csv
// Rows for MPI_Allreduce are labelled "mpi-ring" when Open MPI was told to use its ring
// (--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4).
// `bench_allreduce --list-methods` prints the method table (collectives/methods.hpp) without starting MPI, for
// scripts: one method a line, its name first.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/bus_share.hpp"
#include "bench/cross_core_bound.hpp"
#include "bench/flags/bench_allreduce_flags.hpp"
#include "bench/memory_bound.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/auto_explain.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/methods.hpp"
#include "collectives/scratch_bytes.hpp"
#include "cpu/isa.hpp"
#include "trainers/cli/run_settings.hpp"
#include "trainers/cli/settings_agreement.hpp"

namespace {

using namespace gradsync;

constexpr std::size_t kTargetBytesPerSize = std::size_t{1} << 30;  // auto iterations: ~1 GiB per method and size
constexpr int kMinIters = 5;
constexpr int kMaxIters = 2000;
constexpr const char* kCsvHeader = "method,np,bytes,count,chunk_bytes,time_us,algbw_gbps,busbw_gbps,wrong";

struct MethodSpec {
  std::string label;   // what the row says
  std::string method;  // what make_allreduce builds
  AllreduceOptions options;
  bool uses_chunks = false;  // only these rows sweep --chunk-bytes
  bool is_bound() const { return method == "membound" || method == "xcore"; }
};

struct Row {
  std::string label;
  int np = 0;
  std::size_t bytes = 0, count = 0, chunk = 0;
  double time_us = 0, algbw = 0, busbw = 0;
  long wrong = 0;  // -1: not checked (--shared-buffers)
};

std::string mpi_label() {
  const char* algorithm = std::getenv("OMPI_MCA_coll_tuned_allreduce_algorithm");
  return algorithm && std::string(algorithm) == "4" ? "mpi-ring" : "mpi";
}

// Integer-valued floats: exact sums, so any difference is a bug. A bf16 wire carries integers exactly up to 256,
// so its values stay below 4 (sums below 256 up to 85 ranks). A value depends on i only through i % kValuePeriod.
constexpr std::size_t kValuePeriod = 35;  // lcm(5, 7)
float value(int rank, std::size_t i, bool small) {
  return static_cast<float>(small ? (rank + static_cast<int>(i % 5)) % 4 : (rank + 1) * static_cast<int>(i % 7 + 1));
}

long count_wrong(Allreduce& allreduce, std::span<float> data, const Comm& world) {
  const AllreduceMethod* method = find_allreduce_method(allreduce.name());
  const bool small = method && !method->exact;
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = value(world.rank(), i, small);
  allreduce.run(data);
  // One period of expected sums, each added over the ranks in the same order as before: O(p) per rank rather than
  // O(count p), which a simulation of hundreds of ranks (every rank checking in one process) cannot afford.
  std::array<float, kValuePeriod> expected{};
  for (std::size_t k = 0; k < kValuePeriod; ++k)
    for (int r = 0; r < world.size(); ++r)
      if (allreduce.contributes(r)) expected[k] += value(r, k, small);
  long wrong = 0;
  const ElementRange range = allreduce.result_range(world.rank(), data.size());
  for (std::size_t i = range.begin; i < range.end; ++i) wrong += data[i] != expected[i % kValuePeriod];
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, world.native()), "MPI_Allreduce", world.rank());
  return wrong;
}

// One timed block: `iters` back-to-back calls, all ranks starting together; the max over ranks of the mean.
double time_block(Allreduce& allreduce, std::span<float> buffer, int iters, const Comm& world) {
  world.barrier();
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) allreduce.run(buffer);
  double seconds = (MPI_Wtime() - start) / iters;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, world.native()), "MPI_Allreduce", world.rank());
  return seconds;
}

// All methods at one size. The machine is shared and noisy, so methods are interleaved within each
// repetition and each row reports its median block: the ratios between rows then come from the same moments.
std::vector<Row> measure_size(const std::vector<MethodSpec>& specs, std::size_t count, std::span<float> data, bool check,
                              int warmup, int iters, int reps, const Comm& world) {
  const std::span<float> buffer = data.first(count);
  const std::size_t bytes = count * sizeof(float);
  if (iters <= 0)
    iters = static_cast<int>(
        std::clamp<std::size_t>(kTargetBytesPerSize / (std::max<std::size_t>(bytes, 1) * reps), kMinIters, kMaxIters));
  std::vector<std::unique_ptr<Allreduce>> plans;
  std::vector<Row> rows;
  for (const MethodSpec& spec : specs) {
    if (spec.method == "membound")
      plans.push_back(std::make_unique<bench::MemoryTrafficBound>(world, count));
    else if (spec.method == "xcore")
      plans.push_back(std::make_unique<bench::CrossCoreBound>(world, count));
    else
      plans.push_back(make_allreduce(spec.method, world, spec.options));
    Row row{spec.label, world.size(), bytes, count, spec.uses_chunks ? plans.back()->options().chunk_bytes : 0};
    if (!spec.is_bound()) row.wrong = check ? count_wrong(*plans.back(), buffer, world) : -1;
    for (int i = 0; i < warmup; ++i) plans.back()->run(buffer);
    rows.push_back(row);
  }
  std::vector<std::vector<double>> blocks(specs.size());
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t m = 0; m < specs.size(); ++m) blocks[m].push_back(time_block(*plans[m], buffer, iters, world));
  const int p = world.size();
  for (std::size_t m = 0; m < specs.size(); ++m) {
    std::sort(blocks[m].begin(), blocks[m].end());
    const double seconds = blocks[m][blocks[m].size() / 2];
    rows[m].time_us = seconds * 1e6;
    rows[m].algbw = static_cast<double>(bytes) / seconds / 1e9;
    rows[m].busbw = rows[m].algbw * 2.0 * (p - 1) / p;
  }
  return rows;
}

using Flags = bench::AllreduceFlags;

// The flags turned into numbers.
struct Sizes {
  std::size_t lo = 0, hi = 0;
  std::vector<std::size_t> chunk_list;
  std::size_t segment_bytes = kAutoSegmentBytes;
};

// `text`, the value of the size flag `flag`, in bytes: a whole number of float32 elements, at least one. A size
// between two would be measured as the smaller one under the larger one's name. Throws std::invalid_argument.
std::size_t whole_elements(const std::string& text, const char* flag) {
  const std::size_t bytes = bench::parse_bytes(text, flag);
  if (bytes < sizeof(float) || bytes % sizeof(float) != 0)
    throw std::invalid_argument(
        fmt::format("{} {}: {} bytes is not a whole number of {}-byte float32 elements (at "
                    "least one)",
                    flag, text, bytes, sizeof(float)));
  return bytes;
}

// Every rank, the same answer: throws std::invalid_argument naming the first bad flag.
Sizes check_flags(const Flags& f) {
  Sizes s;
  s.lo = whole_elements(f.min_bytes, "--min-bytes");
  s.hi = whole_elements(f.max_bytes, "--max-bytes");
  if (s.hi < s.lo) throw std::invalid_argument("--min-bytes/--max-bytes: need min <= max");
  if (!(f.step_factor > 1)) throw std::invalid_argument("--step-factor: must be > 1");
  if (!(f.link_gbps >= 0)) throw std::invalid_argument("--link-gbps: must be a rate in Gbit/s, > 0");
  if (f.iters < 0 || f.warmup < 0) throw std::invalid_argument("--iters/--warmup: must be >= 0");
  if (f.reps < 1) throw std::invalid_argument("--reps: must be >= 1");
#ifndef GRADSYNC_SIMULATED
  if (f.shared_buffers)
    throw std::invalid_argument("--shared-buffers: only in a simulation build (scripts/simulate.sh build)");
#endif
  s.chunk_list =
      f.chunks.empty() ? std::vector<std::size_t>{kAutoChunkBytes} : bench::parse_byte_list(f.chunks, "--chunk-bytes");
  if (!f.chunks.empty() && std::find(s.chunk_list.begin(), s.chunk_list.end(), 0) != s.chunk_list.end())
    throw std::invalid_argument("--chunk-bytes: sizes must be at least 1 byte (leave it out for the default)");
  if (!f.segment.empty()) {
    s.segment_bytes = f.segment == "whole" ? kWholeMessages : bench::parse_bytes(f.segment, "--segment-bytes");
    if (s.segment_bytes == 0) throw std::invalid_argument("--segment-bytes: at least 1 byte, or 'whole'");
  }
  return s;
}

// Takes the '+nocheck' and '+wN' suffixes off `m` into `o`; returns them, to label the row. Throws
// std::invalid_argument on a bad window.
std::string take_suffixes(std::string& m, AllreduceOptions& o) {
  // "ring+nocheck": the same method without the agreement check, interleaved with the checked one, so
  // the check's cost is measured as a ratio within one run.
  std::string suffix;
  if (const auto plus = m.find("+nocheck"); plus != std::string::npos && plus + 8 == m.size()) {
    m.resize(plus);
    o.check_agreement = false;
    suffix = "+nocheck";
  }
  // "ring+w1": the ring with one exchange in flight (no pipelining), to measure the pipelined ring against it.
  if (const auto plus = m.rfind("+w"); plus != std::string::npos && plus > 0) {
    const std::string window = m.substr(plus + 2);
    if (window.empty() || window.find_first_not_of("0123456789") != std::string::npos || std::stoul(window) == 0)
      throw std::invalid_argument(fmt::format("--methods: '{}': the window after '+w' must be a number >= 1", m));
    o.ring_window = std::stoul(window);
    suffix = m.substr(plus) + suffix;
    m.resize(plus);
  }
  return suffix;
}

// Every rank: the rows --methods asks for, each method built once so that impossible options are rejected
// (std::invalid_argument) before any timing.
std::vector<MethodSpec> make_specs(const Flags& f, const Sizes& s, const Comm& world) {
  std::vector<MethodSpec> specs;
  std::stringstream ss(f.methods);
  for (std::string m; std::getline(ss, m, ',');) {
    AllreduceOptions o;
    o.check_agreement = !f.no_check;
    o.report_choices = true;
    o.segment_bytes = s.segment_bytes;
    const std::string suffix = take_suffixes(m, o);
    if (m == "membound" || m == "xcore") {
      specs.push_back({m, m, o});
      continue;
    }
    const std::string label = m;  // with the method's own options as given ("hier:ranks_per_host=2")
    std::tie(m, o.own) = parse_method_spec(label);
    const AllreduceMethod* method = find_allreduce_method(m);
    if (!method)
      throw std::invalid_argument(fmt::format("--methods: unknown method '{}' (choose from {}, membound, xcore)", m,
                                              allreduce_method_names([](const AllreduceMethod&) { return true; })));
    if (method->chunked) {
      for (std::size_t c : s.chunk_list) {
        o.chunk_bytes = c;
        specs.push_back({label + suffix, m, o, true});
      }
    } else if (method->servers == ServerRanks::some && !o.own.find(kServersOption)) {
      const int servers = f.servers > 0 ? f.servers : std::max(1, world.size() / 2);
      o.own.set(kServersOption, servers);
      specs.push_back({fmt::format("{}{}{}", label, servers, suffix), m, o});
    } else if (m == "mpi") {
      specs.push_back({mpi_label() + suffix, m, o});
    } else {
      specs.push_back({label + suffix, m, o});
    }
    method->make(world, specs.back().options);  // rejects impossible options before any timing
  }
  return specs;
}

// Every rank: rank 0's CSV file with its header, or nullptr (no --csv, or not rank 0). Throws
// std::invalid_argument on every rank when rank 0 cannot open it.
std::FILE* open_csv(const std::string& csv, const Comm& world) {
  const bool lead = world.rank() == 0;
  std::FILE* out = nullptr;
  if (lead && !csv.empty()) out = std::fopen(csv.c_str(), "w");
  // Only rank 0 writes the CSV; every rank learns whether it could, so that all stop together.
  if (!world.all_ok(!lead || csv.empty() || out))
    throw std::invalid_argument(fmt::format("--csv {}: rank 0 cannot open it for writing", csv));
  if (out) fmt::print(out, "{}\n", kCsvHeader);
  return out;
}

// Rank 0 only.
void print_header(const Flags& f, const Comm& world) {
#ifdef GRADSYNC_SIMULATED
  const char* note = " (simulated ranks: times are SimGrid's simulated clock)";
#else
  const char* note = world.size() > 2 ? " (np > 2 is oversubscribed on a 2-core machine: timings are not honest)" : "";
#endif
  fmt::print("# bench_allreduce: {} ranks, float32, in place, median of {} interleaved blocks{}{}\n", world.size(),
             f.reps, f.no_check ? ", agreement check off" : "", note);
  fmt::print("# {:>12} {:>3} {:>12} {:>10} {:>8} {:>11} {:>10} {:>10} {:>7}\n", "method", "np", "bytes", "count", "chunk",
             "time_us", "algbw GB/s", "busbw GB/s", "#wrong");
}

// Rank 0 only: one row to stdout and, if open, to the CSV.
void print_row(const Row& r, std::FILE* out) {
  fmt::print("  {:>12} {:>3} {:>12} {:>10} {:>8} {:>11.2f} {:>10.3f} {:>10.3f} {:>7}\n", r.label, r.np, r.bytes, r.count,
             r.chunk, r.time_us, r.algbw, r.busbw, r.wrong);
  std::fflush(stdout);
  if (out)
    fmt::print(out, "{},{},{},{},{},{:.3f},{:.4f},{:.4f},{}\n", r.label, r.np, r.bytes, r.count, r.chunk, r.time_us,
               r.algbw, r.busbw, r.wrong);
}

// Every rank: every size from --min-bytes to --max-bytes, rank 0 printing the rows. Returns the wrong elements
// over all rows.
long run_sizes(const Flags& f, const Sizes& s, const std::vector<MethodSpec>& specs, std::FILE* out, const Comm& world,
               std::vector<bench::BusSample>& samples) {
  // With --shared-buffers, SMPI's shared allocation (collectives/scratch_bytes.hpp says what that costs).
  ScratchBytes bytes;
  bytes.grow_to(s.hi / sizeof(float) * sizeof(float));
  const std::span<float> data(reinterpret_cast<float*>(bytes.data()), s.hi / sizeof(float));
  std::fill(data.begin(), data.end(), 0.0f);
  long total_wrong = 0;
  for (double size = static_cast<double>(s.lo); size <= static_cast<double>(s.hi) * 1.0000001; size *= f.step_factor) {
    const std::size_t count = static_cast<std::size_t>(size) / sizeof(float);
    for (const Row& r : measure_size(specs, count, data, !f.shared_buffers, f.warmup, f.iters, f.reps, world)) {
      total_wrong += std::max(r.wrong, 0L);
      samples.push_back({r.label, r.bytes, r.busbw});
      if (world.rank() == 0) print_row(r, out);
    }
  }
  return total_wrong;
}

// Every rank, after a successful parse: the whole benchmark. Returns the exit code: 1 if any element was wrong.
int run(const Flags& f, const Comm& world) {
  const bool lead = world.rank() == 0;
  const Sizes s = check_flags(f);
  if (f.shared_buffers) share_scratch_between_ranks();
  const std::vector<MethodSpec> specs = make_specs(f, s, world);
  std::FILE* out = open_csv(f.csv, world);
  if (lead) print_header(f, world);
  std::vector<bench::BusSample> samples;
  const long total_wrong = run_sizes(f, s, specs, out, world, samples);
  if (out) std::fclose(out);
  if (lead && f.shared_buffers) fmt::print("# sums not checked: --shared-buffers\n");
  if (lead && !f.shared_buffers)
    fmt::print("# {} wrong element(s) in total{}\n", total_wrong, total_wrong ? ": BUG" : "");
  if (lead) fmt::print("{}", bench::bus_share_summary(samples, f.link_gbps));
  if (lead && f.explain) fmt::print("# auto's choices on rank 0:\n{}", format_auto_choices(auto_choices()));
  return total_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before MPI_Init, so that a script can ask without a launcher.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--list-methods") == 0) {
      fmt::print("{}", allreduce_method_listing());
      return 0;
    }
  refuse_bad_isa_request("bench_allreduce");
  MPI_Init(&argc, &argv);
  const Comm world = Comm::world();
  const bool lead = world.rank() == 0;
  Flags f;
  if (const std::optional<int> done = bench::parse_allreduce_flags(argc, argv, lead, f)) {
    MPI_Finalize();
    return *done;
  }
  int code = 0;
  try {
    // Ranks started with different flags or GRADSYNC_* settings (an MPMD launch) stop here, together, in one line
    // of rank 0's (trainers/cli/settings_agreement.hpp), before they time anything.
    std::vector<Setting> mine = f.settings;
    for (const Setting& s : environment_settings()) mine.push_back(s);
    if (const std::string problem = world.size() > 1 ? agree_on_settings(world, mine) : ""; !problem.empty()) {
      if (lead) fmt::print(stderr, "bench_allreduce: error: {}\n", problem);
      std::fflush(stderr);
      world.barrier();  // rank 0's line out before any rank's exit ends the job
      MPI_Finalize();
      return 2;
    }
    // Rank 0's tuning file is the one auto reads: refused, on every rank together, before anything is timed.
    const std::string tuning = lead ? tuning_variable_problem() : std::string();
    if (!world.all_ok(tuning.empty())) throw std::invalid_argument(lead ? tuning : "GRADSYNC_TUNING");
    code = run(f, world);
  } catch (const std::invalid_argument& e) {
    // Bad flags: every rank finds the same problem (or learns it, as with --csv) and all leave together.
    if (lead) fmt::print(stderr, "bench_allreduce: error: {}\n", e.what());
    code = 2;
  } catch (const std::exception& e) {
    // Anything else may be this rank's alone, with the others inside a collective: stop them all.
    fmt::print(stderr, "bench_allreduce: error on rank {}: {}\n", world.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}
