#include "trainers/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "collectives/watchdog.hpp"
#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "trainers/checkpoint_set.hpp"
#include "trainers/checkpointing.hpp"
#include "trainers/clock.hpp"
#include "trainers/host_map.hpp"
#include "trainers/ps_training.hpp"
#include "trainers/synchronizer.hpp"

namespace gradsync {
namespace {

// One worker's share of the training loop. Owns every buffer the step touches, allocated here, once.
class Worker {
 public:
  Worker(const TrainConfig& config, const Dataset& train, const Mlp& model, int index, int workers, int rank,
         std::vector<float> params, Synchronizer& sync, std::int64_t steps_done)
      : config_(config), train_(train), model_(model), index_(index), workers_(workers), rank_(rank),
        steps_done_(steps_done),
        params_(std::move(params)), grads_{std::vector<float>(params_.size()),
                                           std::vector<float>(sync.gradient_buffers() > 1 ? params_.size() : 0)},
        perm_(train.rows), slice_(config.batch), next_slice_(config.batch), batch_(config.batch, train.features),
        ws_(model.sizes(), config.batch), sync_(sync), straggler_(config.straggler_rank != -1 ? config.straggler_ms : 0) {
  }

  // Steps [from, to) of `epoch`, then drain(): nothing is in flight when it returns (a checkpoint or the epoch's
  // end may follow). Global batch s takes the permutation's positions origin + (s - origin_step) * W * b onwards;
  // origin = origin_step * W * b except in an epoch resumed from a checkpoint written with another global batch.
  EpochWork run_steps(int epoch, long from, long to, long origin_step, std::uint64_t origin, bool straggles) {
    EpochWork work;
    if (epoch != perm_epoch_) {
      shuffled_indices(perm_, config_.seed, static_cast<std::uint64_t>(epoch));
      perm_epoch_ = epoch;
    }
    const std::size_t b = config_.batch, n = train_.rows;
    // This worker's slice of global batch s.
    const auto slice_of = [&](long s, std::vector<std::uint32_t>& out) {
      std::size_t next = (origin + (static_cast<std::size_t>(s - origin_step) * workers_ + index_) * b) % n;
      for (std::size_t j = 0; j < b; ++j, next = next + 1 == n ? 0 : next + 1) out[j] = perm_[next];  // wraps, no divide
    };
    if (from < to) slice_of(from, next_slice_);
    for (long s = from; s < to; ++s) {
      std::swap(slice_, next_slice_);
      const double t0 = now_s();
      gather_batch(train_, slice_, batch_, model_.reads_float_rows(slice_.size()));
      if (s + 1 < to) {
        slice_of(s + 1, next_slice_);
        prefetch_examples(train_, next_slice_, batch_);
      }
      const float loss = model_.loss_and_gradient(params_, batch_, grads(), ws_, sync_.observer(grads()));
      check_finite(loss, epoch, s);
      set_watchdog_step(steps_done_++);
      work.loss_sum += loss;
      if (straggler_ > 0 && (straggles || slowed_this_step(epoch, s)))
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(straggler_));
      const double t1 = now_s();
      sync_.step(params_, grads());
      if (sync_.gradient_buffers() > 1) current_ ^= 1;  // the synchronizer still reads the one just passed
      const double t2 = now_s();
      work.compute_s += t1 - t0;
      work.sync_s += t2 - t1;
      if (steps_done_ == config_.inject_pause_step) pause();
    }
    const double t3 = now_s();
    sync_.drain(params_);
    work.sync_s += now_s() - t3;
    work.hidden_s = sync_.take_hidden_seconds();
    work.steps = static_cast<double>(to - from);
    work.examples = static_cast<double>(to - from) * static_cast<double>(b);
    return work;
  }

  // Testing (--inject-pause): a fixed point at which a test kills or cuts a host. Every worker says so first.
  void pause() {
    fmt::print(stderr, "gradsync: rank {} pausing after step {} for {} s (--inject-pause)\n", rank_, steps_done_,
               config_.inject_pause_s);
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.inject_pause_s));
  }

  // Random straggler: every worker draws the same victim for each step from the seed.
  bool slowed_this_step(int epoch, long step) const {
    if (config_.straggler_rank != TrainConfig::kRandomStraggler) return false;
    Rng rng(config_.seed ^ 0x5742A661ULL,
            static_cast<std::uint64_t>(epoch) * 1000003ULL + static_cast<std::uint64_t>(step));
    return rng.below(workers_) == index_;
  }

  void finish() { sync_.finish(params_); }
  std::span<const float> params() const { return params_; }

  // Stops the run where a NaN or Inf first appears, naming where, before it spreads through the sync.
  void check_finite(float loss, int epoch, long step) {
    const int last_rank = static_cast<int>(workers_) + (config_.is_ps() ? config_.servers : 0) - 1;
    if (steps_done_ == config_.inject_nan_step && rank_ == last_rank)
      grads()[0] = std::numeric_limits<float>::quiet_NaN();
    const bool loss_ok = std::isfinite(loss), grads_ok = all_finite(grads());
    if (loss_ok && grads_ok) return;
    throw DivergenceError(fmt::format("training diverged: {} at epoch {}, step {} (of the epoch; {} overall) on rank {}",
                                      loss_ok ? "NaN/Inf in the gradient" : "NaN/Inf loss", epoch + 1, step, steps_done_,
                                      rank_));
  }

 private:
  const TrainConfig& config_;
  const Dataset& train_;
  const Mlp& model_;
  std::size_t index_, workers_;
  int rank_;
  std::int64_t steps_done_;
  // The gradient buffer the next pass writes: the synchronizer may still read the other one (pipelined SGD).
  std::span<float> grads() { return grads_[current_]; }

  std::vector<float> params_;
  std::vector<float> grads_[2];
  int current_ = 0;
  std::vector<std::uint32_t> perm_, slice_, next_slice_;
  int perm_epoch_ = -1;  // the epoch perm_ was drawn for
  Batch batch_;
  Workspace ws_;
  Synchronizer& sync_;
  double straggler_;
};

// Fields summed, and fields maxed, over all ranks at an epoch's end.
constexpr int kSummed = 11;
std::array<double, kSummed> summed(const EpochWork& w) {
  return {w.loss_sum, w.steps,         w.examples,        w.compute_s,         w.sync_s,  w.server_busy_s,
          w.server_s, w.staleness_sum, w.staleness_count, w.gradients_applied, w.hidden_s};
}

// One epoch's work from its segments (the stretches between checkpoints).
void accumulate(EpochWork& into, const EpochWork& part) {
  std::array<double, kSummed> a = summed(into);
  const std::array<double, kSummed> b = summed(part);
  for (int i = 0; i < kSummed; ++i) a[i] += b[i];
  std::tie(into.loss_sum, into.steps, into.examples, into.compute_s, into.sync_s, into.server_busy_s, into.server_s,
           into.staleness_sum, into.staleness_count, into.gradients_applied, into.hidden_s) =
      std::tuple{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]};
  into.staleness_max = std::max(into.staleness_max, part.staleness_max);
  into.clock_gap_max = std::max(into.clock_gap_max, part.clock_gap_max);
}

EpochWork reduce_to_root(const Comm& world, const EpochWork& mine) {
  std::array<double, kSummed> sum = summed(mine);
  std::array<double, 2> max = {mine.staleness_max, mine.clock_gap_max};
  const int me = world.rank();
  const WaitScope wait("MPI_Reduce (end-of-epoch statistics)");
  check_mpi(MPI_Reduce(me == 0 ? MPI_IN_PLACE : sum.data(), sum.data(), kSummed, MPI_DOUBLE, MPI_SUM, 0, world.native()),
            "MPI_Reduce (epoch statistics)", me);
  check_mpi(MPI_Reduce(me == 0 ? MPI_IN_PLACE : max.data(), max.data(), 2, MPI_DOUBLE, MPI_MAX, 0, world.native()),
            "MPI_Reduce (epoch statistics)", me);
  EpochWork all;
  std::tie(all.loss_sum, all.steps, all.examples, all.compute_s, all.sync_s, all.server_busy_s, all.server_s,
           all.staleness_sum, all.staleness_count, all.gradients_applied, all.hidden_s) =
      std::tuple{sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7], sum[8], sum[9], sum[10]};
  all.staleness_max = max[0];
  all.clock_gap_max = max[1];
  return all;
}

}  // namespace

long steps_per_epoch(const TrainConfig& config, std::size_t rows, int workers) {
  if (config.iterations_per_epoch > 0) return config.iterations_per_epoch;
  const std::size_t share = config.iterations_per_epoch == TrainConfig::kAuto ? static_cast<std::size_t>(workers) : 1;
  return std::max<long>(1, static_cast<long>(rows / (config.batch * share)));
}

namespace {

// Rank 0: what a resumed run keeps and what changed with the world size (docs/reliability.md).
void print_resume(const ResumePoint& p, const TrainConfig& c, int ranks, int workers, std::size_t pieces) {
  const Manifest& m = p.manifest;
  fmt::print("resumed from the checkpoint of step {} (epoch {}, {} examples into it); {}\n", m.step, m.next_epoch + 1,
             m.epoch_examples, p.sources);
  if (!p.skipped.empty()) fmt::print("  not usable, skipped:{}\n", p.skipped);
  if (m.ranks != ranks || m.workers != workers || m.batch != c.batch)
    fmt::print(
        "  world changed: ranks {} -> {}, workers {} -> {}, servers {} -> {} ({} key ranges re-partitioned from "
        "{}); global batch {} -> {} ({} -> {} per worker); the data order (one permutation per epoch from the "
        "seed) and the position in it are kept\n",
        m.ranks, ranks, m.workers, workers, m.servers, c.is_ps() ? c.servers : 0, pieces, m.pieces.size(),
        m.batch * static_cast<std::uint64_t>(m.workers), c.batch * static_cast<std::size_t>(workers), m.batch, c.batch);
  std::fflush(stdout);
}

}  // namespace

TrainResult train(const TrainConfig& given, const TrainTest& data, const Comm& world, const EpochObserver& on_epoch) {
  const int ranks = world.size(), me = world.rank();
  TrainConfig config = given;
  config.batch = given.per_worker_batch(ranks);  // --global-batch, resolved for this world
  const int servers = config.is_ps() ? config.servers : 0;
  const int workers = ranks - servers;
  const bool is_server = me < servers;
  const std::vector<std::size_t> sizes =
      config.layer_sizes(data.train.features, static_cast<std::size_t>(data.train.classes));
  const Mlp model(sizes);
  const std::string fingerprint = run_fingerprint(config, sizes);
  const bool checkpointing = !config.checkpoint_dir.empty();
  std::optional<HostMap> hosts;
  if (checkpointing) hosts.emplace(world);
  ResumePoint start;
  if (config.resume) {
    start = load_newest_checkpoint(config, world, *hosts, fingerprint, model.parameter_count());
  } else {
    start.params.resize(model.parameter_count());
    model.init(start.params, config.seed);  // the same on every rank: no broadcast needed
  }
  const StateLayout layout_of_state{model.parameter_count(),
                                    config.sgd.momentum != 0.0f ? model.parameter_count() : 0,
                                    config.is_ps(),
                                    servers,
                                    ranks,
                                    workers,
                                    config.batch};
  std::optional<CheckpointWriter> writer;
  if (checkpointing)
    writer.emplace(config, world, *hosts, fingerprint, layout_of_state, config.resume ? start.steps_done : -1);
  const long steps = steps_per_epoch(config, data.train.rows, workers);
  const std::uint64_t global_batch = config.batch * static_cast<std::uint64_t>(workers);

  // Roles. Splits are collective, so every rank makes both communicators.
  const Comm worker_comm = world.split(is_server ? MPI_UNDEFINED : 0, me);
  const Comm server_comm = world.split(is_server ? 0 : MPI_UNDEFINED, me);
  Sgd sgd(config.sgd, model.parameter_count());
  const PsLayout layout{servers, workers, model.parameter_count()};
  std::unique_ptr<Synchronizer> sync;
  std::unique_ptr<Worker> worker;
  std::unique_ptr<ParameterServer> server;
  if (is_server) {
    server = std::make_unique<ParameterServer>(world, server_comm, layout, config, start.params, start.optimizer_state);
  } else {
    if (!start.optimizer_state.empty())
      std::copy(start.optimizer_state.begin(), start.optimizer_state.end(), sgd.state().begin());
    sync = config.is_ps()
               ? make_ps_worker(world, layout, config)
               : make_allreduce_synchronizer(config, worker_comm, sgd, model.layer_offsets(), model.parameter_count());
    worker = std::make_unique<Worker>(config, data.train, model, me - servers, workers, me, start.params, *sync,
                                      start.steps_done);
  }
  if (config.resume) {
    // The state the roles now hold, put together on rank 0, must be the checkpoint's bit for bit.
    std::span<const float> params_now = worker ? worker->params() : std::span<const float>{};
    std::span<const float> optimizer_now = sgd.state();
    if (server) {
      params_now = server->gather_model();
      optimizer_now = server->gather_optimizer_state();
    }
    int equal = 1;
    if (me == 0) {
      print_resume(start, config, ranks, workers, layout_of_state.pieces());
      const std::uint32_t params_crc = crc32_floats(params_now), optimizer_crc = crc32_floats(optimizer_now);
      equal = params_crc == start.manifest.params_crc && optimizer_crc == start.manifest.optimizer_crc;
      fmt::print("resumed state: step {}, params crc {:08x}, optimizer crc {:08x}: {} the checkpoint's\n",
                 start.steps_done, params_crc, optimizer_crc, equal ? "equal to" : "DIFFERENT from");
      std::fflush(stdout);
    }
    // A bug, not bad input; every rank stops, none trains on from a state that is not the checkpoint's.
    check_mpi(MPI_Bcast(&equal, 1, MPI_INT, 0, world.native()), "MPI_Bcast (resumed state check)", me);
    if (!equal) throw std::logic_error("the resumed state differs from the checkpoint's (see rank 0's CRCs)");
  }
  // Every checkpoint is collective; no gradient is in flight (the segment before it drained).
  const auto checkpoint = [&](const CheckpointProgress& progress) {
    const std::span<const float> p = server ? server->local_model() : worker->params();
    const std::span<const float> o = server ? server->local_optimizer_state() : std::span<const float>(sgd.state());
    const double t0 = now_s();
    const Manifest m = writer->write(progress, p, o);
    if (me == 0 && !config.quiet) {
      fmt::print(
          "checkpoint: step {}, params crc {:08x}, optimizer crc {:08x}, {} piece(s) on {} host(s) each, "
          "{:.1f} ms\n",
          m.step, m.params_crc, m.optimizer_crc, m.pieces.size(), std::min(config.checkpoint_replicas, hosts->hosts()),
          (now_s() - t0) * 1e3);
      std::fflush(stdout);
    }
  };

  TrainResult result;
  result.sync_name = config.sync_name();
  result.model_name = config.model_name();
  result.ranks = ranks;
  result.workers = workers;
  // Global steps between checkpoints; with a time interval, known once the first steps are timed.
  long interval = checkpointing ? std::max(0L, config.checkpoint_steps) : 0;
  bool timing = checkpointing && config.checkpoint_steps == TrainConfig::kTimeInterval;
  constexpr long kTimedSteps = 50;  // enough that the first, slower steps do not dominate
  std::int64_t global = start.steps_done;
  Workspace eval_ws(model.sizes(), kEvaluationBatch);
  for (int epoch = start.next_epoch; epoch < config.epochs; ++epoch) {
    const double epoch_start = now_s();
    const bool last = epoch + 1 == config.epochs;
    // A resumed epoch continues at the checkpoint's position in the permutation, with this run's global batch.
    long first = 0;
    std::uint64_t origin = 0;
    if (epoch == start.next_epoch && start.epoch_examples > 0) {
      origin = static_cast<std::uint64_t>(start.epoch_examples);
      first = std::min<long>(steps, static_cast<long>(origin / global_batch));
    }
    result.steps += steps - first;
    EpochWork mine;
    for (long s = first; s < steps;) {
      long end = steps;
      if (timing)
        end = std::min(end, s + kTimedSteps);
      else if (interval > 0)
        end = std::min<long>(end, s + (interval - global % interval));
      const double t0 = now_s();
      accumulate(mine, server ? server->serve(end - s)
                              : worker->run_steps(epoch, s, end, first, origin, me == config.straggler_rank));
      global += end - s;
      const long done = end - s;
      s = end;
      if (timing) {
        double per_step = (now_s() - t0) / static_cast<double>(done);
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, &per_step, 1, MPI_DOUBLE, MPI_MAX, world.native()),
                  "MPI_Allreduce (checkpoint interval)", me);
        interval = std::max<long>(1, std::lround(config.checkpoint_seconds / per_step));
        timing = false;
        if (me == 0 && !config.quiet)
          fmt::print("checkpoint every {} steps (--checkpoint-seconds {} at {:.3f} ms per step)\n", interval,
                     config.checkpoint_seconds, per_step * 1e3);
      } else if (interval > 0 && global % interval == 0 && s < steps) {
        checkpoint(
            {global, epoch, static_cast<std::int64_t>(origin + static_cast<std::uint64_t>(s - first) * global_batch)});
      }
    }
    if (worker && last) worker->finish();
    const EpochWork all = reduce_to_root(world, mine);
    const double elapsed = now_s() - epoch_start;  // rank 0's view; the reduction above waited for every rank
    const std::span<const float> model_now = server ? server->gather_model() : worker->params();
    if (me == 0) {
      EpochReport r;
      r.epoch = epoch + 1;
      r.epochs = config.epochs;
      r.train_loss = all.loss_sum / std::max(all.steps, 1.0);
      const Evaluation eval = model.evaluate(model_now, data.test, eval_ws);
      r.test_loss = eval.loss;
      r.test_accuracy = eval.accuracy;
      r.images_per_s = all.examples / elapsed;
      r.elapsed_s = (result.epochs.empty() ? 0 : result.epochs.back().elapsed_s) + elapsed;
      r.compute_s = all.compute_s / workers;
      r.sync_s = all.sync_s / workers;
      r.hidden_s = all.hidden_s / workers;
      if (servers > 0) {
        r.server_busy = all.server_busy_s / std::max(all.server_s, 1e-12);
        r.gradients_applied = all.gradients_applied / servers;
      }
      if (config.is_ps() && config.ps_mode != "bsp" && all.staleness_count > 0) {
        r.staleness_mean = all.staleness_sum / all.staleness_count;
        r.staleness_max = all.staleness_max;
        r.clock_gap_max = all.clock_gap_max;  // asp: how far ahead workers ran; ssp: bounded by S
      }
      result.epochs.push_back(r);
      result.compute_s += r.compute_s;
      result.sync_s += r.sync_s;
      result.hidden_s += r.hidden_s;
      if (on_epoch) on_epoch(r);
      if (last) result.params.assign(model_now.begin(), model_now.end());
    }
    const bool checkpoint_now =
        checkpointing && ((config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) || last ||
                          (interval > 0 && global % interval == 0));
    if (checkpoint_now) checkpoint({global, epoch + 1, 0});
    {
      const WaitScope wait("MPI_Barrier (end of epoch; rank 0 evaluates and checkpoints)");
      world.barrier();  // evaluation time stays out of the next epoch's measurements
    }
  }
  if (me == 0 && !result.epochs.empty()) {
    const EpochReport& final = result.epochs.back();
    result.wall_s = final.elapsed_s;
    result.train_loss = final.train_loss;
    result.test_accuracy = final.test_accuracy;
    // Only the epochs this run trained: after --resume, wall_s does not cover the ones before the checkpoint.
    result.images_per_s =
        static_cast<double>(result.steps) * static_cast<double>(config.batch) * workers / std::max(result.wall_s, 1e-12);
  }
  return result;
}

}  // namespace gradsync
