#pragma once
// What a rank holds of the run when a process failure reaches it, as an in-place recovery takes it
// (trainers/loop/in_place.hpp), and the error of a recovery that cannot continue.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/checkpoint_manifest.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/train_result.hpp"

namespace gradsync {

// What one rank holds of the run when a failure reaches it, taken before its roles are torn down.
struct LiveState {
  std::int64_t applied = 0;         // global steps whose updates `params` holds
  std::int64_t started = 0;         // global steps this rank had begun (applied, or one more in flight)
  int next_epoch = 0;               // where those steps end: the epoch still to finish (0-based)
  std::int64_t epoch_examples = 0;  // and the positions of its permutation they took
  bool epoch_reported = false;      // next_epoch's steps are all done and its report was made
  bool own_replica = false;         // this rank keeps a model of its own (gossip): it keeps it through the recovery
  std::vector<float> params;        // full size
  std::vector<float> optimizer;     // full size, or empty for plain SGD
  // A server (ServerLiveState): its index among the servers (-1 on a worker); params and optimizer are current on the
  // key ranges it holds, at step `applied`, and previous_* hold them at applied - 1 when has_previous.
  int server = -1;
  bool has_previous = false;
  std::vector<float> previous_params, previous_optimizer;
  ReportHistory history;
  EpochWork epoch_work;         // this rank's work in next_epoch so far
  double epoch_started_at = 0;  // and when it started here (now_s(); 0: no epoch had started)
  TrainResult result;  // the epochs reported so far and the run's sums (every rank keeps them: report_everywhere)
};

// A recovery that cannot continue the run (too few ranks left, a key range lost with all its servers, a global
// batch the survivors cannot share): thrown on every survivor together, with the same message, so that they end
// on their own (lead: the one survivor that says why) instead of through MPI_Abort, which Open MPI 5's launcher does
// not always survive after a lost process.
struct InPlaceRecoveryError : std::runtime_error {
  InPlaceRecoveryError(const std::string& what, bool says_why) : std::runtime_error(what), lead(says_why) {}
  bool lead;
};

}  // namespace gradsync
