#pragma once
// Writing checkpoint sets on several hosts (checkpoint_writer.cpp), and finding the newest complete one
// (checkpoint_resume.cpp); checkpointing.hpp says what a set is. Both are collective over the run's world.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/checkpoint/host_map.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

// How the state is cut: one piece per server shard (sharded: ranks 0..servers-1 own them), or one piece owned by
// rank 0 and present, bit-identical, on every worker (replicated: ring, mpi, serial).
struct StateLayout {
  std::size_t parameter_count = 0;
  // Sharded: blocks of parameter_count (checkpointing.hpp): the optimizer's (none for plain SGD), then with a
  // compressed push each worker's residual. Replicated: the optimizer's (0 or parameter_count), then the
  // synchronizer's own state (Synchronizer::state_size), all in the one piece.
  std::size_t optimizer_count = 0;
  bool sharded = false;
  int servers = 0;  // sharded: shards, owned by ranks 0..servers-1
  int ranks = 1, workers = 1;
  std::size_t batch = 0;  // per worker
  std::size_t pieces() const { return sharded ? static_cast<std::size_t>(servers) : 1; }
};

struct CheckpointProgress {
  std::int64_t step = 0;  // global steps done
  std::int64_t next_epoch = 0;
  std::int64_t epoch_examples = 0;  // positions of next_epoch's permutation trained
  ReportHistory history;            // the run's reports so far, the same on every rank; recorded when known
};

class CheckpointWriter {
 public:
  // Collective over `world`. The lowest rank of each host creates the host's directory (local_checkpoint_dir) and
  // checks it can write there; it removes the sets of an earlier run (resumed_step < 0: a fresh run), or the sets
  // newer than the one resumed (they belong to the timeline that was lost). Throws CheckpointError on every rank
  // if any host cannot. Rank 0 notes once when fewer hosts than --checkpoint-replicas exist.
  CheckpointWriter(const TrainConfig& config, const Comm& world, const HostMap& hosts, std::string fingerprint,
                   StateLayout layout, std::int64_t resumed_step);

  // Collective over the world, at a point where no gradient is in flight. `params` and `optimizer` are full-size
  // views of this rank's state: for sharded state, server k's (only its key range is read); for replicated state,
  // any worker's; ranks with no state pass empty spans. Each piece's holders (HostMap::holders of its owner)
  // write it, then their manifest; pieces whose holders disagree, or that hold NaN/Inf, make every rank throw
  // CheckpointError (the previous set stays). Returns the set's manifest (with here = false).
  Manifest write(const CheckpointProgress& progress, std::span<const float> params, std::span<const float> optimizer);
  // write() in two halves, for a set whose state is taken before the history it records is known (the epoch-end
  // checkpoint: the state the steps left, the history with the epoch's evaluation). take() is collective (shards
  // reach their holders) and keeps this rank's pieces; write_taken(), with `progress.step` the one taken, does the rest.
  void take(std::int64_t step, std::span<const float> params, std::span<const float> optimizer);
  Manifest write_taken(const CheckpointProgress& progress);
  ~CheckpointWriter();

  const std::string& local_dir() const { return dir_; }

 private:
  struct Held;  // a piece this rank writes: which one, its key range, its state and then its file image
  std::vector<Held> collect_pieces(std::span<const float> params, std::span<const float> optimizer,
                                   std::int64_t step) const;
  void post_piece_transfers(int owner, const std::vector<int>& holders, Held* mine,
                            std::vector<MPI_Request>& requests) const;
  std::vector<std::int64_t> agree_on_pieces(std::vector<Held>& held, const CheckpointProgress& progress) const;
  Manifest manifest_of(const std::vector<std::int64_t>& agreed, const CheckpointProgress& progress) const;
  std::string commit(const std::vector<Held>& held, const Manifest& m, std::int64_t step) const;
  void prune();  // host leaders: keep the newest kKeptSets committed sets
  TrainConfig config_;
  Comm world_;
  int tag_;  // reserved on world_: a piece's parameters travel on tag_, its optimizer state on tag_ + 1
  const HostMap& hosts_;
  std::string fingerprint_;
  StateLayout layout_;
  std::string dir_;
  std::vector<Held> taken_;  // take()'s pieces, until write_taken()
  std::int64_t taken_step_ = -1;
};

// Collective over `world`: every host leader lists the sets in its directory and checks each piece it holds
// against its manifest; rank 0 picks the newest set with a valid copy of every piece on some host, the pieces'
// holders send them to rank 0, and every rank gets the same ResumePoint. Otherwise every rank throws
// CheckpointError with rank 0's message: no complete set (naming each file and what is wrong with it), a set from
// another run (both fingerprints), a batch that does not match, or nothing left to train.
ResumePoint load_newest_checkpoint(const TrainConfig& config, const Comm& world, const HostMap& hosts,
                                   const std::string& fingerprint, std::size_t parameter_count);

// How many committed sets each host keeps: the newest may be torn on some hosts when a host dies mid-write, and
// the one before it is then complete on every host it was written to.
inline constexpr int kKeptSets = 2;

}  // namespace gradsync
