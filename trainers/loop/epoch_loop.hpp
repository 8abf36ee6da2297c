#pragma once
// The epochs of one attempt at a run (trainers/loop/trainer.cpp's train() makes one per attempt: the first, and one
// after each in-place recovery): each epoch's steps in stretches between checkpoints, its report and its checkpoint.
// Only trainer.cpp includes it.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <span>

#include "collectives/watchdog.hpp"
#include "model/model.hpp"
#include "trace/scope.hpp"
#include "trainers/checkpoint/checkpoint_schedule.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/privacy_budget.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/core/train_result.hpp"
#include "trainers/loop/in_place.hpp"
#include "trainers/loop/roles.hpp"
#include "trainers/loop/run_start.hpp"
#include "trainers/loop/steps_per_epoch.hpp"

namespace gradsync {

// The epochs of one run, on every rank; the report is complete on rank 0.
class EpochLoop {
 public:
  // `history`: the reports so far (starting_history's, or a recovery's). With `replicate`, every rank keeps the
  // result's reports (rank 0 shares each epoch's), so that any survivor of a lost rank 0 can carry them on.
  EpochLoop(const TrainConfig& config, const TrainTest& data, const Comm& world, const Model& model, Roles& roles,
            CheckpointSchedule& schedule, const ResumePoint& start, const ReportHistory& history, bool replicate,
            const EpochCarry& carried = {})
      : config_(config), data_(data), world_(world), model_(model), roles_(roles), schedule_(schedule), start_(start),
        steps_(steps_per_epoch(config, data.train.rows, roles.workers())),
        global_batch_(config.batch * static_cast<std::uint64_t>(roles.workers())), global_(start.steps_done),
        eval_ws_(model, kEvaluationBatch), history_(history), replicate_(replicate), carried_(carried) {
    const SyncFamilyInfo& family = sync_family(config.sync.family);
    if (world.rank() == 0 && family.report.spectral_gap)
      spectral_gap_ = family.report.spectral_gap(config, roles.workers());
  }

  // Every rank, before the first epoch: the result's numbers from the history a resumed run continues. Returns false
  // when there is nothing to train: with config.stop_at_target, a target reached before the checkpoint (rank 0 says
  // so, and its result holds the resumed model).
  bool begin(TrainResult& result) const {
    set_target(result);
    result.resumed_s = history_.elapsed_s;
    if (!config_.stop_at_target || !history_.target_reached()) return true;
    if (world_.rank() == 0) {
      fmt::print("--stop-at-target: target {:.4g} was reached before the checkpoint of step {}: nothing to train\n",
                 config_.target_accuracy, start_.steps_done);
      std::fflush(stdout);
      result.params = start_.params;
    }
    return false;
  }

  // One epoch: its steps in stretches between checkpoints, the report, the epoch-end checkpoint.
  // Returns whether the run stops here: its last epoch, or with config.stop_at_target the first to reach the target.
  bool run(int epoch, TrainResult& result, const EpochObserver& on_epoch) {
    // The epoch's time is the slowest rank's from its own start, so the ranks start together: work one rank does
    // alone before it (rank 0's report of the graph, whose spectral gap once took 0.78 s of CPU at 256 ranks) would
    // otherwise count as the waiting of every rank whose exchange needs it, and gossip, with no collective to absorb
    // it, would report it as steps. Every epoch: the end-of-epoch broadcast lets its root, rank 0, run ahead.
    {
      const WaitScope wait("MPI_Barrier (the epoch starts on every rank together)");
      world_.barrier();
    }
    const double epoch_start = epoch == start_.next_epoch && carried_.started_at > 0 ? carried_.started_at : now_s();
    epoch_started_ = epoch_start;
    const bool last = epoch + 1 == config_.epochs;
    const EpochWork mine = train(epoch, result, epoch_start);
    // Taken before finish(): the last epoch's checkpoint keeps the state the steps left (local SGD's replicas between
    // averages), so a run resumed from it continues as the uninterrupted run would. Written after the evaluation,
    // whose report history it records.
    const double checkpoint_start = now_s();
    const bool due = schedule_.due_at_epoch_end(epoch, last, global_);
    if (due) take_checkpoint();
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
    share_history();
    if (replicate_) broadcast_result(world_, result, 0);
    at_.reported = true;
    if (due) write_checkpoint({global_, epoch + 1, 0, history_});
    if (last || !config_.stop_at_target || !history_.target_reached()) return last;
    roles_.finish();  // the model every worker ends with, as after a last epoch
    if (world_.rank() == 0) result.params.assign(model_now.begin(), model_now.end());
    return true;
  }

  // Local, after a ProcessFailure: where this rank's worker stands, for the survivors' agreement (in_place.hpp).
  void take_live_state(LiveState& live) const {
    roles_.take_live_state(live);
    const long index = at_.step + static_cast<long>(live.applied - at_.global);
    live.next_epoch = at_.epoch;
    live.epoch_reported = index >= steps_ && at_.reported;
    live.epoch_examples =
        index >= steps_
            ? kEpochStepsDone
            : static_cast<std::int64_t>(at_.origin + static_cast<std::uint64_t>(index - at_.first) * global_batch_);
    live.history = history_;
    live.epoch_work = so_far_;
    live.epoch_started_at = epoch_started_;
  }

 private:
  // This rank's work in `epoch`, which started at `epoch_start`. A resumed epoch continues at the checkpoint's
  // position in the permutation, with this run's global batch.
  EpochWork train(int epoch, TrainResult& result, double epoch_start) {
    long first = 0;
    std::uint64_t origin = 0;
    if (epoch == start_.next_epoch && start_.epoch_examples == kEpochStepsDone) first = steps_;
    if (epoch == start_.next_epoch && start_.epoch_examples > 0) {
      origin = static_cast<std::uint64_t>(start_.epoch_examples);
      first = std::min<long>(steps_, static_cast<long>(origin / global_batch_));
    }
    result.steps += steps_ - first;
    // An epoch a recovery interrupted keeps what this rank did of it before (LiveState::epoch_work).
    EpochWork& mine = so_far_;
    mine = epoch == start_.next_epoch ? carried_.work : EpochWork{};
    at_ = {epoch, first, origin, first, global_, false};
    for (long s = first; s < steps_;) {
      at_.step = s;
      at_.global = global_;
      const long end = schedule_.stretch_end(s, steps_, global_);
      const double t0 = now_s();
      accumulate(mine, roles_.run(epoch, s, end, first, origin));
      global_ += end - s;
      const long done = end - s;
      s = end;
      if (!schedule_.after_stretch(now_s() - t0, done) && schedule_.due_inside(global_) && s < steps_) {
        const std::uint64_t position = origin + static_cast<std::uint64_t>(s - first) * global_batch_;
        checkpoint({global_, epoch, static_cast<std::int64_t>(position), history_inside(epoch_start)});
      }
    }
    at_.step = steps_;
    at_.global = global_;
    return mine;
  }

  // The history a checkpoint inside an epoch records: the training time at it is the slowest rank's so far.
  ReportHistory history_inside(double epoch_start) const {
    ReportHistory h = history_;
    const WaitScope wait("MPI_Allreduce (training time at the checkpoint: the slowest rank's)");
    h.elapsed_s += world_.max(now_s() - epoch_start);
    return h;
  }

  // Every checkpoint is collective; no gradient is in flight (the stretch before it drained).
  void checkpoint(const CheckpointProgress& progress) {
    const TraceScope traced(SpanKind::checkpoint, "checkpoint write");
    schedule_.write(progress, roles_.local_params(), roles_.local_optimizer_state());
  }
  void take_checkpoint() {
    const TraceScope traced(SpanKind::checkpoint, "checkpoint: the state taken");
    schedule_.take(global_, roles_.local_params(), roles_.local_optimizer_state());
  }
  void write_checkpoint(const CheckpointProgress& progress) {
    const TraceScope traced(SpanKind::checkpoint, "checkpoint write");
    schedule_.write_taken(progress);
  }

  // Rank 0's history after its evaluation, on every rank: each writing rank records it in its manifests, and they
  // must agree. It also ends the epoch everywhere after the evaluation, as a barrier would: evaluation time stays out
  // of the next epoch's measurements. Whether the target was reached is part of it.
  void share_history() {
    const WaitScope wait("MPI_Bcast (end of epoch: rank 0's report history)");
    std::array<double, 7> h = {static_cast<double>(history_.evaluations),
                               history_.best_accuracy,
                               static_cast<double>(history_.evaluated_steps),
                               history_.evaluated_s,
                               history_.elapsed_s,
                               history_.target_steps,
                               history_.target_s};
    world_.broadcast(h, 0);
    history_.evaluations = static_cast<std::int64_t>(h[0]);  // counts far below 2^53: exact as doubles
    history_.best_accuracy = h[1];
    history_.evaluated_steps = static_cast<std::int64_t>(h[2]);
    history_.evaluated_s = h[3];
    history_.elapsed_s = h[4];
    history_.target_steps = h[5];
    history_.target_s = h[6];
  }

  // Rank 0: the epoch's report from every rank's work, with `model_now` evaluated on the test set.
  void report(int epoch, const EpochWork& all, double elapsed, std::span<const float> model_now,
              const ReplicaSpread& spread, TrainResult& result, const EpochObserver& on_epoch) {
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
    r.elapsed_s = history_.elapsed_s + elapsed;
    fill_work(r, all);
    r.consensus_distance = spread.consensus_distance;
    r.replica_accuracy_min = spread.accuracy_min;
    r.replica_accuracy_max = spread.accuracy_max;
    r.spectral_gap = spectral_gap_;
    r.global_steps = static_cast<long>(global_);
    r.best_accuracy = std::max(r.test_accuracy, history_.best_accuracy);  // 0 before any evaluation
    r.round = sync_family(config_.sync.family).shape.rounds;
    if (config_.privacy.dp()) {
      r.dp_rate = dp_sampling_rate(global_batch_, data_.train.rows);
      r.dp_epsilon = dp_epsilon_after(config_.privacy, r.dp_rate, global_);
    }
    note_target(r);
    history_.evaluations += 1;
    history_.best_accuracy = r.best_accuracy;
    history_.evaluated_steps = r.global_steps;
    history_.evaluated_s = history_.elapsed_s = r.elapsed_s;
    set_target(result);
    result.epochs.push_back(r);
    result.wall_s += elapsed;
    result.compute_s += r.compute_s;
    result.sync_s += r.sync_s;
    result.hidden_s += r.hidden_s;
    result.examples += all.examples;
    result.wire_bytes = r.wire_bytes_per_step < 0 ? -1 : std::max(result.wire_bytes, 0.0) + all.wire_bytes;
    if (on_epoch) on_epoch(r);
    if (epoch + 1 == config_.epochs) result.params.assign(model_now.begin(), model_now.end());
  }

  // Rank 0: the report's per-worker times, bytes and parameter-server figures from every rank's work.
  void fill_work(EpochReport& r, const EpochWork& all) const {
    const int workers = roles_.workers(), servers = roles_.servers();
    r.compute_s = all.compute_s / workers;
    r.sync_s = all.sync_s / workers;
    r.hidden_s = all.hidden_s / workers;
    // Per worker and global step; a round-based family's workers take many local steps a round, and a step is a round.
    const double worker_steps = sync_family(config_.sync.family).shape.rounds ? workers : all.steps;
    r.wire_bytes_per_step = config_.wire_bytes_counted() ? all.wire_bytes / std::max(worker_steps, 1.0) : -1;
    if (servers > 0) {
      r.server_busy = all.server_busy_s / std::max(all.server_s, 1e-12);
      r.gradients_applied = all.gradients_applied / servers;
    }
    if (servers > 0 && all.staleness_count > 0) {
      r.staleness_mean = all.staleness_sum / all.staleness_count;
      r.staleness_max = all.staleness_max;
      r.clock_gap_max = all.clock_gap_max;  // asp: how far ahead workers ran; ssp: bounded by S
    }
  }

  // --target-accuracy: the first crossing, interpolated between this evaluation and the one before (history_, which
  // after a resume holds the last evaluation before the checkpoint).
  void note_target(const EpochReport& r) {
    const double a = config_.target_accuracy;
    if (a <= 0 || history_.target_reached() || r.test_accuracy < a) return;
    history_.target_s = r.elapsed_s;
    history_.target_steps = static_cast<double>(r.global_steps);
    if (history_.evaluations == 0) return;
    // The evaluation before: its best accuracy is below a.
    const double f = (a - history_.best_accuracy) / (r.test_accuracy - history_.best_accuracy);
    history_.target_s = history_.evaluated_s + f * (r.elapsed_s - history_.evaluated_s);
    history_.target_steps = static_cast<double>(history_.evaluated_steps) +
                            f * static_cast<double>(r.global_steps - history_.evaluated_steps);
  }

  // The result's best accuracy and target crossing, from the history (which without a target of this run's may
  // carry the checkpoint's).
  void set_target(TrainResult& result) const {
    const bool ours = config_.target_accuracy > 0;
    result.best_accuracy = history_.evaluations > 0 ? history_.best_accuracy : 0;
    result.target_elapsed_s = ours ? history_.target_s : -1;
    result.target_steps = ours ? history_.target_steps : -1;
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
  // The run's reports so far (every rank: rank 0's, shared after each evaluation), from the resumed checkpoint's.
  ReportHistory history_;
  const bool replicate_;
  // A recovery's carry-over into its first epoch (this rank's work and seconds before the failure), and this
  // epoch's so far, for the next recovery.
  EpochCarry carried_;
  EpochWork so_far_;
  double epoch_started_ = 0;
  // Where the steps stand, for an in-place recovery: the stretch being run (its first step in the epoch and the
  // global steps before it), the epoch's first step and permutation origin, whether its report was made.
  struct Position {
    int epoch = 0;
    long first = 0;
    std::uint64_t origin = 0;
    long step = 0;
    std::int64_t global = 0;
    bool reported = false;
  } at_;
};

}  // namespace gradsync
