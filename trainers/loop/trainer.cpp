#include "trainers/loop/trainer.hpp"

#include <algorithm>
#include <stdexcept>

#include "collectives/watchdog.hpp"
#include "model/model.hpp"
#include "trace/scope.hpp"
#include "trainers/checkpoint/checkpoint_schedule.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/compression/compressed_jobs.hpp"
#include "trainers/compression/compression_checks.hpp"
#include "trainers/families/sync_registry.hpp"
#include "trainers/loop/clock.hpp"
#include "trainers/loop/epoch_work.hpp"
#include "trainers/loop/roles.hpp"
#include "trainers/loop/run_start.hpp"
#include "trainers/report/run_trace.hpp"

namespace gradsync {

long steps_per_epoch(const TrainConfig& config, std::size_t rows, int workers) {
  if (sync_family(config.sync.family).rounds) return 1;  // an epoch is a round (federated averaging)
  if (config.iterations_per_epoch > 0) return config.iterations_per_epoch;
  const std::size_t share = config.iterations_per_epoch == TrainConfig::kAuto ? static_cast<std::size_t>(workers) : 1;
  return std::max<long>(1, static_cast<long>(rows / (config.batch * share)));
}

namespace {

// How the run's state is cut into checkpoint pieces: one per server, or one replicated on the workers. A
// synchronizer's own state (compression) follows the optimizer's in the replicated piece.
StateLayout state_layout(const TrainConfig& config, int ranks, const Model& model) {
  const std::size_t parameter_count = model.parameter_count();
  const int servers = config.server_ranks(), workers = config.worker_count(ranks);
  const SyncFamilyInfo& family = sync_family(config.sync.family);
  const std::size_t optimizer = (config.sgd.momentum != 0.0f ? parameter_count : 0) +
                                compressed_state_size(config, model.layers(), workers) +
                                (family.state_size ? family.state_size(config, parameter_count, workers) : 0);
  return {parameter_count, optimizer, servers > 0, servers, ranks, workers, config.batch};
}

TrainResult empty_result(const TrainConfig& config, const Comm& world) {
  TrainResult result;
  result.sync_name = config.sync_name();
  result.model_name = config.model_name();
  result.ranks = world.size();
  result.workers = config.worker_count(world.size());
  return result;
}

// The epochs of one run, on every rank; the report is complete on rank 0.
class EpochLoop {
 public:
  EpochLoop(const TrainConfig& config, const TrainTest& data, const Comm& world, const Model& model, Roles& roles,
            CheckpointSchedule& schedule, const ResumePoint& start)
      : config_(config), data_(data), world_(world), model_(model), roles_(roles), schedule_(schedule), start_(start),
        steps_(steps_per_epoch(config, data.train.rows, roles.workers())),
        global_batch_(config.batch * static_cast<std::uint64_t>(roles.workers())), global_(start.steps_done),
        eval_ws_(model, kEvaluationBatch) {
    const SyncFamilyInfo& family = sync_family(config.sync.family);
    if (world.rank() == 0 && family.spectral_gap) spectral_gap_ = family.spectral_gap(config, roles.workers());
  }

  // One epoch: its steps in stretches between checkpoints, the report, the epoch-end checkpoint.
  // Returns whether the run stops here: its last epoch, or with config.stop_at_target the first to reach the target.
  bool run(int epoch, TrainResult& result, const EpochObserver& on_epoch) {
    const double epoch_start = now_s();
    const bool last = epoch + 1 == config_.epochs;
    const EpochWork mine = train(epoch, result);
    // Before finish(): the last epoch's checkpoint keeps the state the steps left (local SGD's replicas between
    // averages), so a run resumed from it continues as the uninterrupted run would.
    const double checkpoint_start = now_s();
    if (schedule_.due_at_epoch_end(epoch, last, global_)) checkpoint({global_, epoch + 1, 0});
    const double checkpoint_s = now_s() - checkpoint_start;  // kept out of the epoch's time, as the evaluation is
    if (last) roles_.finish();
    const EpochWork all = reduce_to_root(world_, mine);
    // The slowest rank's time, not rank 0's: in an asynchronous run (gossip --async) rank 0 may finish its steps while
    // others still exchange, and a simulated reduction to it need not wait for them.
    const double elapsed = [&] {
      const WaitScope wait("MPI_Allreduce (the epoch's time: the slowest rank's)");
      return world_.max(now_s() - epoch_start - checkpoint_s);
    }();
    const std::span<const float> model_now = roles_.model_on_root();
    const ReplicaSpread spread = roles_.replica_spread(data_.test, eval_ws_);
    if (world_.rank() == 0) report(epoch, all, elapsed, model_now, spread, result, on_epoch);
    if (last || !config_.stop_at_target) {
      const WaitScope wait("MPI_Barrier (end of epoch; rank 0 evaluates and checkpoints)");
      world_.barrier();  // evaluation time stays out of the next epoch's measurements
      return last;
    }
    // Rank 0 alone knows whether the target was reached; its word also keeps the next epoch's clock out of the
    // evaluation, as the barrier does.
    const int reached = [&] {
      const WaitScope wait("MPI_Bcast (end of epoch: was the target reached?)");
      return world_.broadcast(world_.rank() == 0 && result.target_elapsed_s >= 0 ? 1 : 0, 0);
    }();
    if (reached == 0) return false;
    roles_.finish();  // the model every worker ends with, as after a last epoch
    if (world_.rank() == 0) result.params.assign(model_now.begin(), model_now.end());
    return true;
  }

 private:
  // This rank's work in `epoch`. A resumed epoch continues at the checkpoint's position in the permutation, with this
  // run's global batch.
  EpochWork train(int epoch, TrainResult& result) {
    long first = 0;
    std::uint64_t origin = 0;
    if (epoch == start_.next_epoch && start_.epoch_examples > 0) {
      origin = static_cast<std::uint64_t>(start_.epoch_examples);
      first = std::min<long>(steps_, static_cast<long>(origin / global_batch_));
    }
    result.steps += steps_ - first;
    EpochWork mine;
    for (long s = first; s < steps_;) {
      const long end = schedule_.stretch_end(s, steps_, global_);
      const double t0 = now_s();
      accumulate(mine, roles_.run(epoch, s, end, first, origin));
      global_ += end - s;
      const long done = end - s;
      s = end;
      if (!schedule_.after_stretch(now_s() - t0, done) && schedule_.due_inside(global_) && s < steps_)
        checkpoint(
            {global_, epoch, static_cast<std::int64_t>(origin + static_cast<std::uint64_t>(s - first) * global_batch_)});
    }
    return mine;
  }

  // Every checkpoint is collective; no gradient is in flight (the stretch before it drained).
  void checkpoint(const CheckpointProgress& progress) {
    const TraceScope traced(SpanKind::checkpoint, "checkpoint write");
    schedule_.write(progress, roles_.local_params(), roles_.local_optimizer_state());
  }

  // Rank 0: the epoch's report from every rank's work, with `model_now` evaluated on the test set.
  void report(int epoch, const EpochWork& all, double elapsed, std::span<const float> model_now,
              const ReplicaSpread& spread, TrainResult& result, const EpochObserver& on_epoch) {
    const int workers = roles_.workers(), servers = roles_.servers();
    EpochReport r;
    r.epoch = epoch + 1;
    r.epochs = config_.epochs;
    r.train_loss = all.loss_sum / std::max(all.steps, 1.0);
    const Evaluation eval = [&] {
      const TraceScope traced(SpanKind::evaluation, "evaluation (test set)");
      return model_.evaluate(model_now, data_.test, eval_ws_);
    }();
    r.test_loss = eval.loss;
    r.test_accuracy = eval.accuracy;
    r.images_per_s = all.examples / elapsed;
    r.elapsed_s = (result.epochs.empty() ? 0 : result.epochs.back().elapsed_s) + elapsed;
    r.compute_s = all.compute_s / workers;
    r.sync_s = all.sync_s / workers;
    r.hidden_s = all.hidden_s / workers;
    // Per worker and global step; a round-based family's workers take many local steps a round, and a step is a round.
    const double worker_steps = sync_family(config_.sync.family).rounds ? workers : all.steps;
    r.wire_bytes_per_step = config_.wire_bytes_counted() ? all.wire_bytes / std::max(worker_steps, 1.0) : -1;
    if (servers > 0) {
      r.server_busy = all.server_busy_s / std::max(all.server_s, 1e-12);
      r.gradients_applied = all.gradients_applied / servers;
    }
    if (servers > 0 && config_.ps_mode != PsMode::bsp && all.staleness_count > 0) {
      r.staleness_mean = all.staleness_sum / all.staleness_count;
      r.staleness_max = all.staleness_max;
      r.clock_gap_max = all.clock_gap_max;  // asp: how far ahead workers ran; ssp: bounded by S
    }
    r.consensus_distance = spread.consensus_distance;
    r.replica_accuracy_min = spread.accuracy_min;
    r.replica_accuracy_max = spread.accuracy_max;
    r.spectral_gap = spectral_gap_;
    r.global_steps = static_cast<long>(global_);
    r.best_accuracy = std::max(r.test_accuracy, result.epochs.empty() ? 0.0 : result.epochs.back().best_accuracy);
    r.round = sync_family(config_.sync.family).rounds;
    note_target(r, result);
    result.epochs.push_back(r);
    result.compute_s += r.compute_s;
    result.sync_s += r.sync_s;
    result.hidden_s += r.hidden_s;
    result.examples += all.examples;
    result.wire_bytes = r.wire_bytes_per_step < 0 ? -1 : std::max(result.wire_bytes, 0.0) + all.wire_bytes;
    if (on_epoch) on_epoch(r);
    if (epoch + 1 == config_.epochs) result.params.assign(model_now.begin(), model_now.end());
  }

  // --target-accuracy: the first crossing, interpolated between this evaluation and the one before (result.epochs).
  void note_target(const EpochReport& r, TrainResult& result) const {
    const double a = config_.target_accuracy;
    if (a <= 0 || result.target_elapsed_s >= 0 || r.test_accuracy < a) return;
    result.target_elapsed_s = r.elapsed_s;
    result.target_steps = static_cast<double>(r.global_steps);
    if (result.epochs.empty()) return;
    const EpochReport& before = result.epochs.back();  // its best_accuracy is below a
    const double f = (a - before.best_accuracy) / (r.test_accuracy - before.best_accuracy);
    result.target_elapsed_s = before.elapsed_s + f * (r.elapsed_s - before.elapsed_s);
    result.target_steps =
        static_cast<double>(before.global_steps) + f * static_cast<double>(r.global_steps - before.global_steps);
  }

  const TrainConfig& config_;
  const TrainTest& data_;
  const Comm& world_;
  const Model& model_;
  Roles& roles_;
  CheckpointSchedule& schedule_;
  const ResumePoint& start_;
  const long steps_;                  // per worker and epoch
  const std::uint64_t global_batch_;  // examples per global step
  std::int64_t global_;               // global steps done
  Workspace eval_ws_;
  double spectral_gap_ = -1;  // rank 0: the family's mixing graph's, or -1
};

// Rank 0: the run's totals from its last epoch. Only the epochs this run trained: after --resume, wall_s does not
// cover the ones before the checkpoint.
void summarize(TrainResult& result) {
  if (result.epochs.empty()) return;
  const EpochReport& final = result.epochs.back();
  result.wall_s = final.elapsed_s;
  result.train_loss = final.train_loss;
  result.test_accuracy = final.test_accuracy;
  result.images_per_s = result.examples / std::max(result.wall_s, 1e-12);
}

}  // namespace

TrainResult train(const TrainConfig& given, const TrainTest& data, const Comm& world, const EpochObserver& on_epoch) {
  TrainConfig config = given;
  config.batch = given.per_worker_batch(world.size());  // --global-batch, resolved for this world
  const std::unique_ptr<Model> owned =
      make_model(config, data.train.features, static_cast<std::size_t>(data.train.classes));
  const Model& model = *owned;
  if (const std::string problem = validate_against_model(config, model.layers()); !problem.empty())
    throw std::invalid_argument(problem);  // train_main checks first; the same on every rank, before any message
  const std::string fingerprint = run_fingerprint(config, model.describe());
  CheckpointSchedule schedule(config, world);
  const ResumePoint start = starting_point(config, world, schedule, fingerprint, model);
  const StateLayout state = state_layout(config, world.size(), model);
  if (schedule.enabled()) schedule.open(fingerprint, state, config.resume ? start.steps_done : -1);
  RunTrace trace(config.observe, world, config.progress == Progress::thread && (config.buckets || config.pipeline));
  Roles roles(config, data.train, model, world, start);
  if (config.resume) check_resumed_state(start, roles, config, world, state.pieces());
  TrainResult result = empty_result(config, world);
  result.target_accuracy = config.target_accuracy;
  result.rounds = sync_family(config.sync.family).rounds;
  EpochLoop epochs(config, data, world, model, roles, schedule, start);
  for (int epoch = start.next_epoch; epoch < config.epochs; ++epoch)
    if (epochs.run(epoch, result, on_epoch)) break;
  trace.finish();
  if (world.rank() == 0) summarize(result);
  return result;
}

}  // namespace gradsync
