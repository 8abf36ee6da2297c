#pragma once
// In-place recovery (--recover inplace, under ULFM: collectives/fault_tolerance.hpp): when a process fails, the
// survivors revoke every communicator, shrink the world to themselves, agree on who is gone and on the newest step
// any of them finished, and take the state of that step from its holder, exactly what a resume from a checkpoint
// taken at that step would read (a ResumePoint). The trainer then builds every role afresh on the new world from
// the registry, as at start-up: the methods are re-planned for the new p, the epoch's remaining examples re-dealt
// over the survivors from the same permutation (none lost, none seen twice), and with --global-batch the global
// batch kept. At most the step in flight is lost: it is done again on the survivors.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/checkpoint_manifest.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/train_result.hpp"
#include "trainers/loop/live_state.hpp"

namespace gradsync {

// ResumePoint::epoch_examples of a recovery whose next_epoch has all its steps done but not its report: the epoch
// takes no step and reports (its position in the permutation depends on a global batch that has changed).
inline constexpr std::int64_t kEpochStepsDone = -1;

// Root's reports and sums of `result` on every rank of `comm` (collective): how every rank keeps them through a run
// that may lose rank 0.
void broadcast_result(const Comm& comm, TrainResult& result, int root);

// What a rank did of an epoch that a failure interrupted: carried into the re-formed run's report of that epoch
// (each survivor its own; the lost ranks' share is gone with them).
struct EpochCarry {
  EpochWork work;
  double started_at = 0;  // when that epoch started here (now_s()'s clock), or 0: the time of the recovery counts
};

// Collective over the live ranks of `world`, which every survivor calls once a ProcessFailure reached it (after
// revoke_all). Shrinks `world` (replaced by the survivors' communicator) and returns the point the run continues
// from, with `mine` the caller's state: the newest step any survivor finished, taken from the lowest-ranked survivor
// that holds it (every rank's own replica kept where own_replica), and `into` the state every survivor continues
// with. `world_ranks` (MPI_COMM_WORLD's numbering of `world`'s ranks, the caller's; updated) and `hosts` (each
// world rank's host name) name the lost. A failure during the recovery starts it again on the ranks still alive.
// Throws InPlaceRecoveryError naming the numbers when the run cannot continue on the survivors (too few ranks, a
// --global-batch they cannot share, a key range lost).
ResumePoint reform_after_failure(Comm& world, std::vector<int>& world_ranks, const std::vector<std::string>& hosts,
                                 LiveState& mine, const TrainConfig& config, double failed_at, RecoveryReport& report);

// Collective over `world`: the survivors of a recovery (`successor` false) and the successors spawn_successors
// started for the ranks `lost` (only the survivors' is read), merged, the survivors first. Every rank leaves with
// rank 0's result (its reports and sums) and with `job_ranks` (each world rank's number as the job started it, a
// successor taking the number of the rank it replaces, in order) and `hosts` (by job rank) for the new world; a
// successor also takes rank 0's `point` (the model, optimizer state, position and history the run continues from),
// a survivor keeps its own (a gossip survivor its replica), and `servers` (those serving after the recovery) is rank
// 0's on every rank.
void share_with_successors(const Comm& world, bool successor, std::span<const int> lost, ResumePoint& point,
                           TrainResult& result, std::vector<int>& job_ranks, std::vector<std::string>& hosts,
                           int& servers);

// The line a recovery prints: "recovered in place: lost rank 2 (host node2) at step 37; continuing on 3 ranks (3
// workers) from step 37, 1 step redone; 0.012 s from the failure to the re-formed roles".
std::string format_recovery(const RecoveryReport& r);

// The line a join prints: "joined in place: 1 successor for rank 2 (host node2); continuing on 4 ranks (4
// workers); 0.085 s to spawn it and hand it the run". `ranks_now`, `workers_now`: the grown world's; `successors`:
// their job ranks; `hosts`: by job rank.
std::string format_join(const RecoveryReport& r, int ranks_now, int workers_now, std::span<const int> successors,
                        const std::vector<std::string>& hosts);

// The host name of every rank of `world`, in its order: collective (one all-gather), taken at start-up while every
// rank can still answer.
std::vector<std::string> host_names(const Comm& world);

}  // namespace gradsync
