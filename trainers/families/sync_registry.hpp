#pragma once
// The synchronizer families (make_synchronizer.hpp builds them). A family is one file, trainers/families/<id>.cpp,
// defining its SyncFamilyInfo, and one line of trainers/families/sync_families.def.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "collectives/comm.hpp"
#include "model/layer_shape.hpp"
#include "model/sgd.hpp"
#include "trainers/config/sync_method.hpp"
#include "trainers/families/synchronizer.hpp"

namespace gradsync {

struct TrainConfig;  // trainers/config/train_config.hpp, whose checks read this registry

// What a worker's synchronizer is built from. Everything is the caller's and must outlive the synchronizer.
struct SyncSetup {
  const Comm& world;    // every rank of the run, on a communicator of the synchronizer's own (tags of its own)
  const Comm& workers;  // the worker ranks (world itself when no rank serves)
  Sgd& sgd;             // this worker's optimizer
  // The model's layers in the flat buffer (Model::layers()), which bucket boundaries follow (between a layer's rows
  // too, with dense buckets: bucket_ranges), and the buffer's size: needed with config.buckets (std::invalid_argument
  // without them) and by families with servers; the layers also with config.compression (tensor shapes).
  std::span<const LayerShape> layers = {};
  std::size_t parameter_count = 0;
  // Global steps taken before this run (a resumed run's checkpoint): a family whose schedule depends on the step
  // (exp1's peers, asynchronous gossip's pairs) continues it where it stopped.
  std::int64_t steps_done = 0;
  // The training set and the model, for a family that trains in rounds of its own local steps (fedavg); nullptr is
  // allowed for the others.
  const Dataset* train = nullptr;
  const Model* model = nullptr;
};

struct SyncFamilyInfo {
  SyncFamily family;
  std::string_view name;   // its --sync text; empty for the family its allreduce methods name
  bool servers = false;    // world ranks 0..config.servers-1 serve (trainers/ps/ps_training.hpp), the others work
  bool pipelines = false;  // --pipeline 1 applies
  bool buckets = false;    // --buckets applies
  // Each of the loop's steps is a round of local training (Synchronizer::trains_in_rounds): an epoch is one round.
  bool rounds = false;
  // The family's own checks for a run on `ranks` processes: empty, or a one-line message naming the flag.
  std::string (*validate)(const TrainConfig& config, int ranks) = nullptr;
  // Families that mix models over a graph: the spectral gap of its mixing matrix on `workers` ranks
  // (collectives/topology.hpp), which runs report; nullptr for the others.
  double (*spectral_gap)(const TrainConfig& config, int workers) = nullptr;
  // How many floats its synchronizers' save_state() writes on `workers` workers (the checkpoint's layout is planned
  // before they exist); nullptr: none.
  std::size_t (*state_size)(const TrainConfig& config, std::size_t parameter_count, int workers) = nullptr;
  // A worker's synchronizer; called on every worker rank, collective as make_synchronizer says.
  std::unique_ptr<Synchronizer> (*make)(const TrainConfig& config, const SyncSetup& setup) = nullptr;
};

// Every family, in SyncFamily's order.
std::span<const SyncFamilyInfo* const> sync_family_table();
const SyncFamilyInfo& sync_family(SyncFamily family);

}  // namespace gradsync
