// bench_sync: the synchronizers compared inside one training run. Separate runs of `train` land in different
// states of this host (docs/collectives.md, "Two speeds"), so their ratio says as much about the minute as about the
// method. Here every rank trains a model (--model, the MLP by default) on MNIST and switches synchronizer every --block
// steps (ring, mpi, ring, ...), timing whole steps per method: the two methods see the same moments, the same data and
// the same caches. `serial` blocks are the baseline for speedups: rank 0 alone trains its own replica with batch --batch
// while the other ranks sleep (waking every 100 us to poll), as in a one-process run; speedup = ranks x serial step /
// parallel step (constant total work). A serial step's "sync" is its optimizer step alone. The first --settle steps of
// every block run untimed: right after a switch, and on a core just woken from a serial block, steps are not yet steady.
// "step / first" is each method's step time over the first listed method's. Each --methods entry is a typed spec
// (trainers/config/sync_spec.hpp): methods with overlap modifiers (ring+buckets, ring+pipe, mpi+pipe+thread, ...) run
// as train runs them; "sync us" is then the communication the step waited for and "hidden us" what was in flight
// while it computed. Each block ends with nothing in flight. Rows are named by TrainConfig::sync_name() (ring-buckets,
// mpi-pipe-thread); --csv adds a column per dimension (family, allreduce, compressor, mode).
//   mpirun -n 2 --bind-to core build/bin/bench_sync --methods ring,mpi,serial --batch 32 --steps 6000
// with scripts/run.sh's one-node training flags too (TRAINING_SHM_FLAGS in scripts/mpi.sh).
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/cross_core_bound.hpp"
#include "bench/flags/bench_sync_flags.hpp"
#include "collectives/comm.hpp"
#include "collectives/methods.hpp"
#include "collectives/wire_meter.hpp"
#include "compression/compressors.hpp"
#include "cpu/isa.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/model.hpp"
#include "model/rng.hpp"
#include "trace/scope.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/compression_checks.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/data_source.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/loop/run_trace.hpp"
#include "trainers/report/report.hpp"

namespace {

using namespace gradsync;

// "xcore": the ring's schedule through a shared window (bench/cross_core_bound.hpp), with the gradient computed
// straight into the window: what a ring could do on one node without MPI's transport. The same sums in the same
// order as the ring, so the replicas stay identical.
class SharedWindowSgd final : public Synchronizer {
 public:
  SharedWindowSgd(const Comm& comm, std::size_t parameter_count, Sgd& sgd)
      : ring_(comm, parameter_count), sgd_(sgd), inv_workers_(1.0f / static_cast<float>(comm.size())) {}
  std::span<float> gradient_buffer() const { return ring_.window(); }
  void step(std::span<float> params, std::span<float> grads) override {
    ring_.run(grads);  // reduces its window, which `grads` is
    sgd_.step(params, grads, inv_workers_);
  }

 private:
  bench::CrossCoreBound ring_;
  Sgd& sgd_;
  float inv_workers_;
};

// Blocks until every rank of `comm` has called this. Sleeps between polls so that a waiting rank leaves its core
// idle, as it is during a one-process run, rather than spinning in MPI_Barrier.
void idle_barrier(const Comm& comm) {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm.native(), &request), "MPI_Ibarrier (bench_sync serial block)", comm.rank());
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (bench_sync serial block)", comm.rank());
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

struct MethodTimes {
  std::string name;  // SyncMethodEntry::name: the table's row, the CSV's method column
  bench::SyncMethodEntry entry;
  std::unique_ptr<Synchronizer> sync;
  std::span<float> grads;  // where this method's steps write their gradient
  bool serial = false;     // rank 0 steps alone, on `serial_params`
  double compute_s = 0, sync_s = 0, hidden_s = 0;
  // Sent by gradsync's own messages in all of this method's steps, settling ones included: a pipelined step's
  // exchange finishes in the next step, and a block drains at its end (collectives/wire_meter.hpp).
  double wire_bytes = 0;
  bool wire_counted = true;  // false: the gradients travel in the MPI library's collective
  long steps = 0;
  std::span<float> spare;  // the second gradient buffer of a pipelined method, else empty
  long wire_steps = 0;     // the steps wire_bytes covers
};

using Flags = bench::SyncFlags;

// Every rank: empty, or why the flags cannot run `config` (the same on every rank). Each method is checked as train
// checks its run (validate()) with the spec's choices.
std::string check_flags(const Flags& f, const TrainConfig& config, const Comm& world) {
  // Ranks launched with different flags would pair different collectives and hang: refuse that first.
  const auto [lo, hi] = world.min_max(std::hash<std::string>{}(
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", fmt::join(f.method_entries, ","), f.batch, f.model->name,
                  fmt::join(f.hidden, ","), f.steps, f.block, f.settle, f.data_dir, f.bucket_kib)));
  if (lo != hi) return "the ranks were given different flags (every rank needs the same command line)";
  bool traced = false;
  for (std::size_t i = 0; i < f.methods.size(); ++i) {
    traced |= f.methods[i].traced();
    if (!f.methods[i].spec.own_base.empty()) continue;
    const TrainConfig c = f.methods[i].run(config);
    const int ranks = c.sync.family == SyncFamily::serial ? 1 : world.size();  // rank 0 alone trains serial's steps
    if (const std::string problem = validate(c, ranks); !problem.empty())
      return fmt::format("--methods {}: {}", f.method_entries[i], problem);
  }
  if (traced && f.trace.empty()) return "--methods: a +traced method records into --trace FILE's trace: give --trace";
  if (f.methods.empty()) return "--methods: name at least one method";
  if (f.settle >= f.block) return fmt::format("--settle {} leaves no timed step in a --block of {}", f.settle, f.block);
  const long blocks = f.block * static_cast<long>(f.methods.size());
  if (f.steps < blocks)
    return fmt::format("--steps {} gives some method no --block of {} steps: use at least {}", f.steps, f.block, blocks);
  return {};
}

// The replicas the methods train: one shared by the parallel methods, one of the serial baseline's own, so that the
// parallel replicas stay identical.
struct Replicas {
  Replicas(const Model& model, const TrainConfig& config)
      : params(model.parameter_count()), grads(model.parameter_count()), spare(model.parameter_count()),
        sgd(config.sgd, model.parameter_count()), serial_sgd(config.sgd, model.parameter_count()) {
    model.init(params, config.seed);
    serial_params = params;
  }
  std::vector<float> params, grads, spare, serial_params;
  Sgd sgd, serial_sgd;
};

std::vector<MethodTimes> make_methods(const Flags& f, const TrainConfig& config, const Comm& world, const Model& model,
                                      Replicas& r) {
  std::vector<MethodTimes> timed;
  for (const bench::SyncMethodEntry& entry : f.methods) {
    const std::string name = entry.name();
    if (entry.spec.own_base == "xcore") {
      auto shared = std::make_unique<SharedWindowSgd>(world, model.parameter_count(), r.sgd);
      const std::span<float> window = shared->gradient_buffer().first(model.parameter_count());
      // No messages: a shared window.
      timed.push_back({name, entry, std::move(shared), window, false, 0, 0, 0, 0, false, 0, {}});
      continue;
    }
    const TrainConfig c = entry.run(config);
    if (c.sync.family == SyncFamily::serial) {
      timed.push_back(
          {name, entry, make_synchronizer(c, {world, world, r.serial_sgd}), r.grads, true, 0, 0, 0, 0, true, 0, {}});
      continue;
    }
    // The same refusal as train's, the same on every rank: a compressor the model cannot carry.
    if (const std::string problem = validate_against_model(c, model.layers()); !problem.empty())
      throw std::invalid_argument(fmt::format("--methods {}: {}", name, problem));
    auto sync = make_synchronizer(c, {world, world, r.sgd, model.layers(), model.parameter_count()});
    const bool pipelined = sync->gradient_buffers() > 1;
    timed.push_back({name, entry, std::move(sync), r.grads, false, 0, 0, 0, 0, c.wire_bytes_counted(), 0,
                     pipelined ? std::span<float>(r.spare) : std::span<float>()});
  }
  return timed;
}

// One step of method `m` on its replica: gathered, computed, synchronized, timed after the block's settling steps.
void timed_step(const Flags& f, long s, const TrainTest& data, const Model& model, std::span<const std::uint32_t> slice,
                Batch& b, Workspace& ws, std::span<float> replica, MethodTimes& m) {
  const std::uint64_t sent0 = bytes_sent_so_far();
  const double t0 = now_s();
  gather_batch(data.train, slice, b, model.reads_float_rows(slice.size()));
  const float loss = model.loss_and_gradient(replica, b, m.grads, ws, m.sync->observer(replica, m.grads));
  if (!std::isfinite(loss))
    throw std::runtime_error(fmt::format("training diverged at step {} ({} block{}): loss {}", s, m.name,
                                         m.serial ? ", rank 0's serial replica" : "", loss));
  const double t1 = now_s();
  m.sync->step(replica, m.grads);
  if (!m.spare.empty()) std::swap(m.grads, m.spare);  // the pipelined method still reads the gradient just passed
  // A block ends with nothing in flight: the next method starts from the same complete model on every rank.
  if (s % f.block == f.block - 1 || s + 1 == f.steps) m.sync->drain(replica);
  const double hidden_s = m.sync->take_hidden_seconds();
  if (s % f.block >= f.settle) {
    m.compute_s += t1 - t0;
    m.sync_s += now_s() - t1;
    m.hidden_s += hidden_s;
    ++m.steps;
  }
  m.wire_bytes += static_cast<double>(bytes_sent_so_far() - sent0);
  ++m.wire_steps;
}

// Every rank: --steps steps, the methods taking turns every --block. The trainer's split with --iterations-per-epoch
// auto: every rank draws the same permutation and takes its own slice of each global batch.
// With a +traced method among them, `recorder` records only during the +traced methods' steps.
void train_alternating(const Flags& f, const TrainTest& data, const Model& model, const Comm& world, std::uint64_t seed,
                       Replicas& r, std::vector<MethodTimes>& timed, TraceRecorder* recorder) {
  const bool switched = std::any_of(timed.begin(), timed.end(), [](const MethodTimes& m) { return m.entry.traced(); });
  const std::size_t n = data.train.rows, w = static_cast<std::size_t>(world.size()),
                    me = static_cast<std::size_t>(world.rank());
  std::vector<std::uint32_t> perm(n), slice(f.batch);
  Batch b(f.batch, data.train.features);
  Workspace ws(model, f.batch);
  const long per_epoch = static_cast<long>(n / (f.batch * w));
  world.barrier();
  for (long s = 0; s < f.steps; ++s) {
    if (s % per_epoch == 0) shuffled_indices(perm, seed, static_cast<std::uint64_t>(s / per_epoch));
    const std::size_t first = (static_cast<std::size_t>(s % per_epoch) * w + me) * f.batch;
    for (std::size_t j = 0; j < f.batch; ++j) slice[j] = perm[first + j];
    MethodTimes& m = timed[static_cast<std::size_t>(s / f.block) % timed.size()];
    if (switched)
      install_trace_recorder(m.entry.traced() ? recorder : nullptr);  // between steps: nothing in flight records
    if (TraceRecorder* t = trace_recorder()) t->set_step(s);
    const TraceScope traced(SpanKind::step, "step");
    // In a serial block rank 0 steps alone; the other ranks sleep in a barrier it joins after the block's last step.
    if (m.serial && world.rank() != 0) {
      if (s % f.block == 0) idle_barrier(world);
      continue;
    }
    timed_step(f, s, data, model, slice, b, ws, m.serial ? std::span<float>(r.serial_params) : std::span<float>(r.params),
               m);
    if (m.serial && (s % f.block == f.block - 1 || s + 1 == f.steps)) idle_barrier(world);
  }
}

// Synchronous methods keep one model on every rank: a replica that differs, or holds a NaN, means the timings
// describe a broken run. Every rank learns the verdict, so all fail together.
void check_replicas(const Comm& world, std::span<const float> params) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the parameters' bits
  for (float p : params) {
    std::uint32_t bits;
    std::memcpy(&bits, &p, sizeof bits);
    hash = (hash ^ bits) * 1099511628211ULL;
  }
  const auto [hash_lo, hash_hi] = world.min_max(hash);
  const bool finite = all_finite(params);
  if (!world.all_ok(finite))
    throw std::runtime_error(finite ? "another rank's parameters hold NaN or Inf"
                                    : "this rank's parameters hold NaN or Inf");
  if (hash_lo != hash_hi) throw std::runtime_error("the ranks' parameters differ after training");
}

// A method's line of the results: per-step means over the ranks (the serial baseline's are rank 0's alone).
struct Row {
  double compute_us, sync_us, hidden_us, step_us, over_first;
  std::string wire_kb;  // "-": the MPI library's collective carried the gradients, and its messages are not counted
  double speedup;       // np x serial step / step; 0 without a serial method
};

// Every rank: the mean over ranks of each method's per-step compute, sync and hidden times and wire bytes.
std::vector<Row> results(const Comm& world, const std::vector<MethodTimes>& timed) {
  std::vector<double> sums;
  for (const MethodTimes& m : timed) {
    const double k = static_cast<double>(std::max(m.steps, 1L));
    sums.insert(sums.end(), {m.compute_s / k, m.sync_s / k, m.hidden_s / k,
                             m.wire_bytes / static_cast<double>(std::max(m.wire_steps, 1L))});
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM, world.native()),
            "MPI_Allreduce (bench_sync results)", world.rank());
  std::vector<Row> rows;
  double serial_us = 0;
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const double ranks = timed[i].serial ? 1.0 : static_cast<double>(world.size());
    const double* v = &sums[4 * i];
    rows.push_back({v[0] / ranks * 1e6, v[1] / ranks * 1e6, v[2] / ranks * 1e6, (v[0] + v[1]) / ranks * 1e6, 0,
                    timed[i].wire_counted ? fmt::format("{:.1f}", v[3] / ranks / 1024) : "-", 0});
    if (timed[i].serial) serial_us = rows.back().step_us;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].over_first = rows[i].step_us / rows[0].step_us;
    if (serial_us > 0) rows[i].speedup = timed[i].serial ? 1.0 : world.size() * serial_us / rows[i].step_us;
  }
  return rows;
}

void print_table(const Flags& f, const Comm& world, const Model& model, const std::vector<MethodTimes>& timed,
                 const std::vector<Row>& rows) {
  const bool serial = rows.front().speedup > 0;
  fmt::print(
      "bench_sync: {} ranks, {} {} ({} parameters), batch {} per worker, {} steps in blocks of {} (first {} "
      "untimed), methods alternated\n",
      world.size(), f.model->name, model.describe(), model.parameter_count(), f.batch, f.steps, f.block, f.settle);
  fmt::print("{:>16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>14} {:>13}{}\n", "method", "timed", "compute us", "sync us",
             "hidden us", "step us", "step / first", "wire KB/step", serial ? "  speedup vs serial" : "");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    fmt::print("{:>16} {:>7} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f} {:>14.3f} {:>13}{}\n", timed[i].name, timed[i].steps,
               r.compute_us, r.sync_us, r.hidden_us, r.step_us, r.over_first, r.wire_kb,
               serial ? fmt::format("{:>20.3f}", r.speedup) : "");
  }
}

// --csv: a row per method, the table's columns and one per dimension of the method's configuration.
void append_rows(const Flags& f, const TrainConfig& config, int ranks, const std::vector<MethodTimes>& timed,
                 const std::vector<Row>& rows) {
  static constexpr const char* kHeader =
      "method,np,model,batch,timed,compute_us,sync_us,hidden_us,step_us,step_over_first,wire_kb_per_step,speedup,"
      "traced,family,allreduce,compressor,mode";
  static_assert(std::string_view(kHeader).ends_with(kSyncDimensionColumns));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const bench::SyncMethodEntry& entry = timed[i].entry;
    // xcore is no family's: a bound on what a ring could do through shared memory.
    const std::string_view bound = entry.spec.own_base;
    const std::string dimensions =
        bound.empty() ? sync_dimension_fields(entry.run(config)) : fmt::format("bound,{},,blocking", bound);
    append_csv_line(
        "--csv", f.csv, kHeader,
        fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{},{},{},{}", timed[i].name, ranks,
                    config.model_name(), f.batch, timed[i].steps, r.compute_us, r.sync_us, r.hidden_us, r.step_us,
                    r.over_first, r.wire_kb == "-" ? "" : r.wire_kb,
                    r.speedup > 0 ? fmt::format("{:.4f}", r.speedup) : "", entry.traced() ? 1 : 0, dimensions));
  }
}

int run(int argc, char** argv, const Comm& world) {
  Flags f;
  if (const std::optional<int> done = bench::parse_sync_flags(argc, argv, world.rank() == 0, f)) return *done;
  // Problems with the flags are found the same way on every rank: all leave with code 2, rank 0 says why. Every
  // later failure may be one rank's alone and aborts the job (main).
  const auto usage_error = [&](const std::string& why) {
    if (world.rank() == 0) fmt::print(stderr, "bench_sync: error: {}\n", why);
    return 2;
  };
  TrainConfig config;  // the settings every method shares (SyncMethodEntry::run)
  config.model = f.model;
  config.hidden = f.hidden;
  config.bucket_bytes = f.bucket_kib << 10;
  config.batch = f.batch;
  config.data_dir = f.data_dir;
  if (const std::string problem = check_flags(f, config, world); !problem.empty()) return usage_error(problem);
  const std::optional<TrainTest> loaded = load_training_data_on_every_rank(config, world, "bench_sync");
  if (!loaded) return 2;
  const TrainTest& data = *loaded;
  if (f.batch * static_cast<std::size_t>(world.size()) > data.train.rows)
    return usage_error(fmt::format("--batch {} on {} ranks is more than the {} training images", f.batch, world.size(),
                                   data.train.rows));
  if (const std::string problem = validate_model_against_data(config, data.train.features); !problem.empty())
    return usage_error(problem);
  const std::unique_ptr<Model> owned =
      make_model(config, data.train.features, static_cast<std::size_t>(data.train.classes));
  const Model& model = *owned;
  install_agreed_kernel_plan(world, model.planned_gemms(f.batch));  // every rank: one plan
  Replicas replicas(model, config);
  ObserveOptions observe;
  observe.trace_file = f.trace;
  observe.slow_ranks = SlowRanks::off;    // its methods alternate by blocks: a late rank would be per method, not per run
  RunTrace trace(observe, world, false);  // before the synchronizers: it must outlive their threads
  std::vector<MethodTimes> timed = make_methods(f, config, world, model, replicas);
  train_alternating(f, data, model, world, config.seed, replicas, timed, trace.recorder());
  install_trace_recorder(trace.recorder());
  trace.finish();
  check_replicas(world, replicas.params);
  const std::vector<Row> rows = results(world, timed);
  if (world.rank() == 0) {
    print_table(f, world, model, timed, rows);
    if (!f.csv.empty()) append_rows(f, config, world.size(), timed, rows);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  refuse_bad_isa_request("bench_sync");
  const BlisConfig blis = configure_blis(1);  // before MPI_Init, as in train
  // Serialized: an overlap run's communication thread makes MPI calls while this thread makes none.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int code = 0;
  {
    const Comm world = Comm::world();
    try {
      code = run(argc, argv, world);
    } catch (const std::exception& e) {
      fmt::print(stderr, "bench_sync: error on rank {}: {}\n", world.rank(), e.what());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  MPI_Finalize();
  return code;
}
