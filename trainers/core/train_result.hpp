#pragma once
// What a run reports: one EpochReport an epoch (round) and the TrainResult at its end, filled by the loop
// (trainers/loop/trainer.hpp) and printed by trainers/report/, which therefore reads them here and not from the loop.
#include <functional>
#include <string>
#include <vector>

#include "trainers/core/recovery_report.hpp"

namespace gradsync {

struct EpochReport {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double images_per_s = 0;
  // Training time so far, evaluations and epoch-end checkpoints excluded; after --resume it counts the time before
  // the checkpoint too (its report history's), unless the checkpoint has none (TrainResult::resumed_s).
  double elapsed_s = 0;
  double compute_s = 0;  // this epoch, mean over workers
  double sync_s = 0;     // this epoch, mean over workers
  double hidden_s = 0;   // this epoch, mean over workers: communication hidden behind compute
  // This epoch: bytes every rank's own point-to-point sends put on the wire (servers' included), per worker step;
  // -1 when they travel in the MPI library's collective (TrainConfig::wire_bytes_counted).
  double wire_bytes_per_step = -1;
  double server_busy = -1;     // PS: busy fraction of the servers this epoch, else -1
  double staleness_mean = -1;  // PS asp/ssp: mean update staleness this epoch, else -1
  double staleness_max = -1;
  double clock_gap_max = -1;      // PS asp/ssp: largest lead of a worker over the slowest when released
  double gradients_applied = -1;  // PS: worker gradients applied per key range this epoch (should be W*steps)
  // Families whose workers keep their own models (gossip): test_accuracy is their mean's, and these say how far
  // apart they are (trainers/loop/replica_spread.hpp); -1 otherwise.
  double consensus_distance = -1;
  double replica_accuracy_min = -1;
  double replica_accuracy_max = -1;
  double spectral_gap =
      -1;                 // of the family's mixing graph at this run's size (SyncFamilyInfo's report.spectral_gap), or -1
  long global_steps = 0;  // global steps taken when the epoch ended (rounds, where a step is a round)
  double best_accuracy = 0;  // the highest test_accuracy of the run so far, this epoch's and a resumed run's before
  bool round = false;        // a family that trains in rounds (fedavg): this epoch was one round
  // DP-SGD (--dp-clip): epsilon at --dp-delta spent by global_steps steps at sampling rate dp_rate
  // (trainers/config/privacy_budget.hpp); -1 without DP.
  double dp_epsilon = -1;
  double dp_rate = -1;
};

struct TrainResult {
  std::string sync_name;
  std::string model_name;
  int ranks = 1;
  int workers = 1;
  long steps = 0;        // per worker
  double wall_s = 0;     // this run's training time, per-epoch evaluation excluded (not the time before a resume)
  double compute_s = 0;  // mean over workers
  double sync_s = 0;
  double hidden_s = 0;
  double wire_bytes =
      -1;  // all ranks, this run's epochs (EpochReport::wire_bytes_per_step says which bytes); -1: not counted
  double train_loss = 0;  // last epoch
  double test_accuracy = 0;
  double images_per_s = 0;
  double examples = 0;  // training examples the workers' steps took, this run's epochs
  std::vector<EpochReport> epochs;
  std::vector<float> params;  // the final model (rank 0; the model that was evaluated)
  // After --resume: the training time before this run, from the checkpoint's report history (0 when it has none).
  double resumed_s = 0;
  double best_accuracy = 0;  // the highest test accuracy so far, a resumed run's before the checkpoint included
  // --target-accuracy A: when the best accuracy so far first reached A, interpolated linearly between the evaluation
  // before (the best accuracy until then) and the first at or above A, as McMahan et al. (2017) count rounds (the
  // first evaluation's own values when that one already is); -1 when no target was set or it was not reached. After
  // --resume they count the training before the checkpoint (its report history, which also holds a crossing before
  // it); -1 with best_accuracy >= A when A was reached before a checkpoint whose run aimed at another target.
  double target_accuracy = 0;
  double target_elapsed_s = -1;
  double target_steps = -1;  // global steps; rounds where a step is a round
  bool rounds = false;       // the family trains in rounds (SyncFamilyInfo's shape.rounds): target_steps counts rounds
  // This rank is rank 0 of the run's last world, whose result is complete (without a recovery: world rank 0).
  bool reports = false;
  std::vector<RecoveryReport> recoveries;  // each in-place recovery, in order
};

using EpochObserver = std::function<void(const EpochReport&)>;

}  // namespace gradsync
