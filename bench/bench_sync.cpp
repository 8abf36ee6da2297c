// bench_sync: the synchronizers compared inside one training run. Separate runs of `train` land in different
// states of this host (docs/collectives.md, "Two speeds"), so their ratio says as much about the minute as about the
// method. Here every rank trains a model (--model, the MLP by default) on MNIST and switches synchronizer every --block
// steps (ring, mpi, ring, ...), timing whole steps per method: the two methods see the same moments, the same data and
// the same caches. `serial` blocks are the baseline for speedups: rank 0 alone trains its own replica with batch --batch
// while the other ranks sleep (waking every 100 us to poll), as in a one-process run; speedup = ranks x serial step /
// parallel step (constant total work). A serial step's "sync" is its optimizer step alone. The first --settle steps of
// every block run untimed: right after a switch, and on a core just woken from a serial block, steps are not yet steady.
// "step / first" is each method's step time over the first listed method's. Methods with overlap suffixes
// (ring-buckets, ring-pipe, mpi-pipe-thread, ...) run as train runs them; "sync us" is then the communication the
// step waited for and "hidden us" what was in flight while it computed. Each block ends with nothing in flight.
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
#include <sstream>
#include <string>
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
#include "trainers/compression/compression_checks.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/families/make_synchronizer.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/clock.hpp"
#include "trainers/loop/data_source.hpp"
#include "trainers/report/run_trace.hpp"

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
  std::string name;
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
  bool traced = false;     // a -traced method: the trace recorder is on during its blocks only
  long wire_steps = 0;     // the steps wire_bytes covers
};

// "-traced", the last suffix of a method name: tracing on for that method's blocks. Strips it from `name`.
bool take_traced(std::string& name) {
  constexpr std::string_view kSuffix = "-traced";
  const bool has = name.size() > kSuffix.size() && name.ends_with(kSuffix);
  if (has) name.resize(name.size() - kSuffix.size());
  return has;
}

// A compressor as TrainConfig::sync_name() spells it at the end of `rest` ("-powersgd4", "-topk0.01-noef", "-sign"):
// sets c.compression and strips it. Leaves `rest` alone (and returns true) when it names none.
bool take_compression(std::string& rest, TrainConfig& c) {
  const bool noef = rest.ends_with("-noef");
  const std::string body = noef ? rest.substr(0, rest.size() - 5) : rest;
  const std::size_t dash = body.rfind('-');
  if (dash == std::string::npos) return !noef;
  const std::string word = body.substr(dash + 1);
  const std::size_t digits = word.find_first_of("0123456789.");
  const std::string compressor = word.substr(0, digits);
  if (!find_compressor(compressor)) return !noef;  // "ring-bf16": no compressor in it
  std::string problem;
  const std::optional<CompressionChoice> choice =
      parse_compression(digits == std::string::npos ? compressor : compressor + ":" + word.substr(digits), problem);
  if (!choice) return false;
  c.compression = *choice;
  c.compression.error_feedback = !noef;
  rest.resize(dash);
  return true;
}

// "ring", "ring-buckets", "mpi-pipe-thread", "ring-powersgd4-pipe", ...: an allreduce method, the compressor and the
// overlap options its suffixes name, as TrainConfig::sync_name() spells them. Returns false for anything else.
bool parse_method(const std::string& name, TrainConfig& c) {
  std::string rest = name;
  const auto take = [&](const std::string& suffix) {
    const bool has = rest.size() > suffix.size() && rest.ends_with(suffix);
    if (has) rest.resize(rest.size() - suffix.size());
    return has;
  };
  if (take("-thread")) c.progress = Progress::thread;
  c.pipeline = take("-pipe");
  c.buckets = take("-buckets");
  if (!take_compression(rest, c)) return false;
  const std::optional<SyncMethod> sync = find_sync_method(rest);
  if (!sync || sync->family != SyncFamily::allreduce) return false;
  c.sync = *sync;
  return c.sync_name() == name;
}

using Flags = bench::SyncFlags;

// Every rank: the methods --methods names into `names`. Returns an empty string, or why the flags cannot run (the
// same on every rank).
std::string check_flags(const Flags& f, const Comm& world, std::vector<std::string>& names) {
  // Ranks launched with different flags would pair different collectives and hang: refuse that first.
  const auto [lo, hi] = world.min_max(std::hash<std::string>{}(
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", f.methods, f.batch, f.model, fmt::join(f.hidden, ","), f.steps, f.block,
                  f.settle, f.data_dir, f.bucket_kib)));
  if (lo != hi) return "the ranks were given different flags (every rank needs the same command line)";
  std::stringstream list(f.methods);
  bool traced = false;
  for (std::string m; std::getline(list, m, ',');) {
    TrainConfig c;
    std::string base = m;
    traced |= take_traced(base);
    const bool known = base == "xcore" || base == "serial" || parse_method(base, c);
    if (!known)
      return fmt::format(
          "--methods: '{}' is not one of {} (with -buckets, -pipe, -thread, -traced suffixes), xcore or serial", m,
          allreduce_method_names(trains));
    names.push_back(m);
  }
  if (traced && f.trace.empty()) return "--methods: a -traced method records into --trace FILE's trace: give --trace";
  if (names.empty()) return "--methods: name at least one method";
  if (f.settle >= f.block) return fmt::format("--settle {} leaves no timed step in a --block of {}", f.settle, f.block);
  if (f.steps < f.block * static_cast<long>(names.size()))
    return fmt::format("--steps {} gives some method no --block of {} steps: use at least {}", f.steps, f.block,
                       f.block * static_cast<long>(names.size()));
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

std::vector<MethodTimes> make_methods(const std::vector<std::string>& names, const TrainConfig& config, const Comm& world,
                                      const Model& model, Replicas& r) {
  std::vector<MethodTimes> timed;
  for (const std::string& name : names) {
    std::string m = name;
    const bool traced = take_traced(m);
    if (m == "serial") {
      TrainConfig c = config;
      c.sync = sync_method("serial");
      timed.push_back(
          {name, make_synchronizer(c, {world, world, r.serial_sgd}), r.grads, true, 0, 0, 0, 0, true, 0, {}, traced});
      continue;
    }
    if (m == "xcore") {
      auto shared = std::make_unique<SharedWindowSgd>(world, model.parameter_count(), r.sgd);
      const std::span<float> window = shared->gradient_buffer().first(model.parameter_count());
      // No messages: a shared window.
      timed.push_back({name, std::move(shared), window, false, 0, 0, 0, 0, false, 0, {}, traced});
      continue;
    }
    TrainConfig c = config;
    parse_method(m, c);
    // The same refusals as train's, the same on every rank: a compressor the method or the model cannot carry.
    for (const std::string& problem : {validate_compression(c), validate_against_model(c, model.layers())})
      if (!problem.empty()) throw std::invalid_argument(fmt::format("--methods {}: {}", name, problem));
    auto sync = make_synchronizer(c, {world, world, r.sgd, model.layers(), model.parameter_count()});
    const bool pipelined = sync->gradient_buffers() > 1;
    timed.push_back({name, std::move(sync), r.grads, false, 0, 0, 0, 0, c.wire_bytes_counted(), 0,
                     pipelined ? std::span<float>(r.spare) : std::span<float>(), traced});
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
// With a -traced method among them, `recorder` records only during the -traced methods' steps.
void train_alternating(const Flags& f, const TrainTest& data, const Model& model, const Comm& world, std::uint64_t seed,
                       Replicas& r, std::vector<MethodTimes>& timed, TraceRecorder* recorder) {
  const bool switched = std::any_of(timed.begin(), timed.end(), [](const MethodTimes& m) { return m.traced; });
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
    if (switched) install_trace_recorder(m.traced ? recorder : nullptr);  // between steps: nothing in flight records
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

// Every rank: the mean over ranks of each method's per-step compute, sync and hidden times and wire bytes (the
// serial baseline's are rank 0's alone), four per method; rank 0 prints them.
void print_results(const Flags& f, const Comm& world, const Model& model, const std::vector<MethodTimes>& timed) {
  std::vector<double> sums;
  for (const MethodTimes& m : timed) {
    const double k = static_cast<double>(std::max(m.steps, 1L));
    sums.insert(sums.end(), {m.compute_s / k, m.sync_s / k, m.hidden_s / k,
                             m.wire_bytes / static_cast<double>(std::max(m.wire_steps, 1L))});
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM, world.native()),
            "MPI_Allreduce (bench_sync results)", world.rank());
  if (world.rank() != 0) return;
  std::vector<double> step_s;
  double serial_s = 0;
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const double ranks = timed[i].serial ? 1.0 : static_cast<double>(world.size());
    step_s.push_back((sums[4 * i] + sums[4 * i + 1]) / ranks);
    if (timed[i].serial) serial_s = step_s.back();
  }
  fmt::print(
      "bench_sync: {} ranks, {} {} ({} parameters), batch {} per worker, {} steps in blocks of {} (first {} "
      "untimed), methods alternated\n",
      world.size(), f.model, model.describe(), model.parameter_count(), f.batch, f.steps, f.block, f.settle);
  fmt::print("{:>16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>14} {:>13}{}\n", "method", "timed", "compute us", "sync us",
             "hidden us", "step us", "step / first", "wire KB/step", serial_s > 0 ? "  speedup vs serial" : "");
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const double ranks = timed[i].serial ? 1.0 : static_cast<double>(world.size());
    const std::string speedup =
        serial_s > 0 ? fmt::format("{:>20.3f}", timed[i].serial ? 1.0 : world.size() * serial_s / step_s[i]) : "";
    // "-": the MPI library's collective carried the gradients, and its messages are not counted.
    const std::string wire = timed[i].wire_counted ? fmt::format("{:.1f}", sums[4 * i + 3] / ranks / 1024) : "-";
    fmt::print("{:>16} {:>7} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f} {:>14.3f} {:>13}{}\n", timed[i].name, timed[i].steps,
               sums[4 * i] / ranks * 1e6, sums[4 * i + 1] / ranks * 1e6, sums[4 * i + 2] / ranks * 1e6, step_s[i] * 1e6,
               step_s[i] / step_s[0], wire, speedup);
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
  std::vector<std::string> names;
  if (const std::string problem = check_flags(f, world, names); !problem.empty()) return usage_error(problem);
  TrainConfig config;
  config.model = f.model;
  config.hidden = f.hidden;
  config.bucket_bytes = f.bucket_kib << 10;
  config.batch = f.batch;
  config.data_dir = f.data_dir;
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
  std::vector<MethodTimes> timed = make_methods(names, config, world, model, replicas);
  train_alternating(f, data, model, world, config.seed, replicas, timed, trace.recorder());
  install_trace_recorder(trace.recorder());
  trace.finish();
  check_replicas(world, replicas.params);
  print_results(f, world, model, timed);
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
