#pragma once
// Everything that defines a training run. Filled by the `train` command line (cli.hpp) or directly by tests; the
// choices are typed values (sync_method.hpp), so nothing after the parser compares names.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/allreduce.hpp"
#include "compression/compressors.hpp"
#include "model/model.hpp"
#include "model/models.hpp"
#include "model/sgd.hpp"
#include "trainers/config/dataset_id.hpp"
#include "trainers/config/federated_options.hpp"
#include "trainers/config/observe_options.hpp"
#include "trainers/config/privacy_options.hpp"
#include "trainers/config/progress.hpp"
#include "trainers/config/recovery_options.hpp"
#include "trainers/config/robustness_options.hpp"
#include "trainers/core/fault_injection.hpp"
#include "trainers/core/sync_method.hpp"

namespace gradsync {

// Options a family keeps of its own, which only its folder names (its flags' values: SyncFamilyInfo's flags.take
// sets them): the family's type, derived from this one, in its slot of TrainConfig::family_options.
struct FamilyOptions {
  virtual ~FamilyOptions() = default;
};

struct TrainConfig {
  SyncMethod sync;                                  // the family and, for allreduce, the method (sync_family_names())
  const ModelInfo* model = &model_info("softmax");  // an entry of model/models.hpp's list, never null
  std::vector<std::size_t> hidden = {128};  // mlp hidden layer widths (the models that take them: ModelInfo::hidden)
  int epochs = 5;
  std::size_t batch = 32;        // per worker (with global_batch > 0: ignored, see per_worker_batch)
  std::size_t global_batch = 0;  // > 0: the batch summed over all workers, kept when the world size changes
  SgdOptions sgd;
  std::uint64_t seed = 1;
  DatasetId dataset = DatasetId::mnist;
  std::string data_dir;  // empty: the dataset's default location
  // Steps per epoch: kFullPass (default): rows / batch for every worker, so each worker sees an epoch's worth
  // of examples; kAuto: the lab's constant total work, rows / (batch * workers); > 0: that many.
  static constexpr long kAuto = 0;
  static constexpr long kFullPass = -1;
  long iterations_per_epoch = kFullPass;
  int average_every = 0;  // > 0: local SGD, average parameters every H steps (exact allreduce)
  // Local SGD's outer optimizer (DiLoCo): at each average, Nesterov momentum on the difference between the model
  // of the last average and the new mean. outer_lr 1 and outer_momentum 0 are plain averaging, computed as before.
  float outer_lr = 1.0f;
  float outer_momentum = 0.0f;
  double target_accuracy = 0;                 // > 0: the run reports when the evaluated model first reached it
  bool stop_at_target = false;                // and ends after the epoch (round) that reached it
  FederatedOptions fed;                       // --sync fedavg: clients, rounds' sampling, partition
  std::size_t chunk_bytes = kAutoChunkBytes;  // ring: 0 picks per communicator (collectives/allreduce.hpp)
  // Overlap of communication with computation (trainers/overlap/overlapped_sync.hpp, trainers/overlap/comm_engine.hpp).
  static constexpr std::size_t kDefaultBucketBytes = std::size_t{1} << 20;  // docs/overlap.md: how it was chosen
  bool buckets = false;  // allreduce the gradient in buckets during the backward pass
  std::size_t bucket_bytes = kDefaultBucketBytes;
  bool pipeline = false;                // pipelined SGD: step t's gradient is synchronized during step t+1
  Progress progress = Progress::calls;  // who moves nonblocking communication on
  CompressionChoice compression;        // --compress, --error-feedback (compression/compressors.hpp)
  // Parameter server (its mode and bound: trainers/families/ps/ps_options.hpp).
  int servers = 1;        // key-range shards
  int threads = 1;        // BLIS threads per process
  std::string csv;        // append a result row here
  std::string epoch_csv;  // append one row per epoch here
  bool quiet = false;     // no per-epoch lines
  // Reliability.
  double timeout_s = 120;  // watchdog: longest wait on other ranks before the job is aborted (0: off)
  // Where this host keeps its checkpoints (empty: none); "%h" in it stands for the host's name
  // (trainers/checkpoint/checkpointing.hpp: local_checkpoint_dir). Every host writes only to, and reads only from, its
  // own.
  std::string checkpoint_dir;
  int checkpoint_every = 0;  // epochs between epoch-end checkpoints (0: none; one is always taken after the last)
  // Global steps between checkpoints; 0: none but the epoch ends above; kTimeInterval: every checkpoint_seconds.
  static constexpr long kTimeInterval = -1;
  long checkpoint_steps = kTimeInterval;
  // Seconds between checkpoints, turned into a step interval after timing the first steps (all ranks agree on
  // the slowest). The default keeps the overhead of checkpointing, which is a fixed cost per checkpoint, under
  // 2% of training time (docs/reliability.md, "Measured").
  static constexpr double kDefaultCheckpointSeconds = 10;
  double checkpoint_seconds = kDefaultCheckpointSeconds;
  int checkpoint_replicas = 2;  // every checkpoint piece is written on this many hosts (fewer if fewer exist)
  bool resume = false;          // continue from the checkpoint in checkpoint_dir
  // A lost process: automatic re-forms the run in place over the survivors when the MPI can (ULFM, started with
  // --with-ft ulfm) and the family can (recovers_in_place), else the job ends as with abort.
  Recover recover = Recover::automatic;
  // --respawn: after each in-place recovery the survivors start as many successors as ranks were lost
  // (MPI_Comm_spawn of `command`, this process's own command line, which train_main fills) and the run goes on at
  // its size. `successor`: this process is one of them (train_main sets it when MPI_Comm_get_parent has a parent).
  bool respawn = false;
  bool successor = false;
  std::vector<std::string> command;
  FaultInjection faults;     // testing: none by default
  ObserveOptions observe;    // tracing, the slow-rank report, auto's explanations: off by default
  RobustnessOptions robust;  // Byzantine workers, their attack, the robust aggregator: none by default
  PrivacyOptions privacy;    // DP-SGD and secure aggregation: off by default

  // Each family's own options, indexed by SyncFamily; empty: that family's defaults. Shared by copies of the config
  // and never changed in place (set_options replaces the slot).
  std::array<std::shared_ptr<const FamilyOptions>, std::size(kSyncFamilyIds)> family_options;
  void set_options(SyncFamily family, std::shared_ptr<const FamilyOptions> options) {
    family_options[static_cast<std::size_t>(family)] = std::move(options);
  }
  // Family `family`'s options as its own type T, or nullptr when none were set (or they are of another type).
  template <class T>
  const T* options_of(SyncFamily family) const {
    return dynamic_cast<const T*>(family_options[static_cast<std::size_t>(family)].get());
  }
  // A family whose options are a plain struct T keeps it in its slot through these: T's defaults when none were set.
  template <class T>
  struct Held final : FamilyOptions {
    explicit Held(const T& v) : value(v) {}
    T value;
  };
  template <class T>
  const T& options_or_default(SyncFamily family) const {
    static const T defaults{};
    const auto* held = options_of<Held<T>>(family);
    return held ? held->value : defaults;
  }
  template <class T>
  void set_plain_options(SyncFamily family, const T& options) {
    set_options(family, std::make_shared<const Held<T>>(options));
  }

  // World ranks 0..server_ranks()-1 serve (a family with servers: sync_registry.hpp), the others work.
  int server_ranks() const;
  int worker_count(int ranks) const { return ranks - server_ranks(); }
  // Each worker's batch on `ranks` processes: global_batch / workers with --global-batch, else batch.
  std::size_t per_worker_batch(int ranks) const;
  std::string model_name() const;  // "softmax", "mlp-128", "cnn"
  std::string sync_name() const;   // "ring", "ps-ssp2", "ps-bsp-k2", "ring-avg4", ...
  // What sync_name() spells, one dimension a field, for the CSVs' columns: {allreduce, ring, "", blocking},
  // {ps, "", "", ssp}, {allreduce, ring, powersgd4, pipe+thread}, ...
  SyncDimensions sync_dimensions() const;
  // Whether the gradients travel in gradsync's own messages, which collectives/wire_meter.hpp counts; false when
  // they go through the MPI library's collective (--sync mpi, dense or through a compressor that allreduces).
  bool wire_bytes_counted() const;
};

// The model config.model is (model/models.hpp), for data of `features` features per example and `classes` classes:
// the one place a configuration becomes a model. Throws std::invalid_argument naming --model if the data cannot feed
// the model (validate_model_against_data() refuses that first).
std::unique_ptr<Model> make_model(const TrainConfig& config, std::size_t features, std::size_t classes);

// The options config.sync's allreduce is planned with (collectives/allreduce.hpp).
AllreduceOptions allreduce_options(const TrainConfig& config);

}  // namespace gradsync
