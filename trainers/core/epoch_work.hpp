#pragma once
// What one rank did in an epoch (or a stretch of one), and its sum over the ranks at the epoch's end.
#include "collectives/comm.hpp"

namespace gradsync {

// Sums over one epoch on one rank; reduced over all ranks at the epoch's end.
struct EpochWork {
  double loss_sum = 0;       // sum of per-step mean losses (workers)
  double steps = 0;          // steps taken (workers)
  double examples = 0;       // training examples processed (workers)
  double compute_s = 0;      // batch gather, forward/backward (+ injected straggler sleep) (workers)
  double sync_s = 0;         // inside the synchronizer (workers): communication the worker waited for
  double hidden_s = 0;       // communication in flight while the worker computed (workers; overlap)
  double wire_bytes = 0;     // sent by gradsync's own point-to-point messages (collectives/wire_meter.hpp)
  double server_busy_s = 0;  // summing, updating and copying, i.e. not waiting (servers)
  double server_s = 0;       // wall time of the epoch (servers)
  double staleness_sum = 0;  // updates applied between a worker's pull and its push being applied (servers)
  double staleness_count = 0;
  double staleness_max = 0;
  double clock_gap_max = 0;      // SSP: largest (worker clock - slowest clock) when a worker was let go
  double gradients_applied = 0;  // worker gradients applied to this server's key range (servers)
};

// Adds `part` (a stretch between checkpoints) into `into`: sums, and maxima for the max fields.
void accumulate(EpochWork& into, const EpochWork& part);

// Collective over `world`: rank 0 gets every rank's `mine` summed (maxima for the max fields); other ranks get
// an unspecified value.
EpochWork reduce_to_root(const Comm& world, const EpochWork& mine);

}  // namespace gradsync
