#pragma once
// The synchronizer families (trainers/loop/make_synchronizer.hpp builds them). A family is its folder,
// trainers/families/<id>/, whose sources define its SyncFamilyInfo, and one line of trainers/core/sync_families.def.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "collectives/comm.hpp"
#include "model/layer_shape.hpp"
#include "model/sgd.hpp"
#include "trainers/core/server_role.hpp"
#include "trainers/core/sync_method.hpp"
#include "trainers/core/synchronizer.hpp"

namespace CLI {
class App;  // CLI11: a family registers its flags on the command line (trainers/cli/)
}  // namespace CLI

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

// What a family with servers builds a serving rank's ServerRole from. Everything is the caller's and must outlive it.
struct ServerSetup {
  const Comm& world;    // every rank of the run, on the communicator the workers' synchronizers got (SyncSetup::world)
  const Comm& servers;  // the server ranks, world ranks 0..servers-1 in order
  std::span<const float> params;            // the full-size model every rank starts from
  std::span<const float> optimizer_state;   // full-size, or empty for a fresh optimizer
  std::span<const LayerShape> layers = {};  // as SyncSetup's
  std::int64_t steps_done = 0;              // as SyncSetup's: the global steps `params` holds
};

// Whether a flag ("--staleness") was given on the command line (a default cannot be told from a choice by value).
using FlagGiven = std::function<bool(std::string_view flag)>;

// A modifier of the sync spec (trainers/config/sync_spec.hpp: ps+mode=ssp+staleness=2): one of train's flags spelled
// as a word of the spec. Its value is train's to check, as the flag's.
struct SpecModifier {
  std::string_view spelling;    // as the spec writes it: "staleness=S" (a value follows '=') or "async"
  std::string_view flag;        // the train flag it stands for: "--staleness"
  std::string_view value = {};  // the flag's value for a word without '=' ("pipe": "1"); empty: a flag without one
};

// What a family's flags are read into during one parse before they become the configuration's typed values (text, or
// a wider type that is checked first): the family's own type, made by its FamilyFlags::add, one per parse.
struct FlagState {
  virtual ~FlagState() = default;
};

// What applies to the family: the loop's shape and the overlap options it takes.
struct FamilyShape {
  bool servers = false;    // world ranks 0..config.servers-1 serve (build.make_server), the others work
  bool pipelines = false;  // --pipeline 1 applies
  bool buckets = false;    // --buckets applies
  // Each of the loop's steps is a round of local training (a RoundTrainer, build.make_rounds): an epoch is one
  // round, whose average takes an outer optimizer step (--outer-lr, --outer-momentum).
  bool rounds = false;
  // --compress compresses what the family's synchronizers send themselves, and build.state_size counts whatever that
  // keeps (gossip's CHOCO-SGD); false: the gradients go through the gradient compressors' jobs
  // (trainers/gradient_compression/compressed_jobs.hpp), whose residuals and warm starts a checkpoint carries besides.
  bool compresses_itself = false;
};

// The family's own flags of train's command line (trainers/cli/ asks every family for them, whatever the --sync).
struct FamilyFlags {
  // Registers its flags on `app`, each read into `config` or into the state it returns (nullptr: it needs none); the
  // caller keeps both until the parse is over. nullptr: it has no flags.
  std::unique_ptr<FlagState> (*add)(CLI::App& app, TrainConfig& config) = nullptr;
  // After the parse, before any flag check: what its state read into typed values of `config`. Throws
  // CLI::ValidationError naming the flag for a bad value.
  void (*take)(const FlagState* state, TrainConfig& config) = nullptr;
  // Checks of the flags it owns, by whether they were given (`given("--flag")`), made on every run whatever its --sync
  // (a family's flag given to another family is refused here): empty, or "--flag: message".
  std::string (*check_given)(const TrainConfig& config, const FlagGiven& given) = nullptr;
  // After every family's check_given: the values that only make sense once those passed. Throws
  // CLI::ValidationError naming the flag for a bad value.
  void (*take_checked)(const CLI::App& app, const FlagState* state, TrainConfig& config) = nullptr;
  // The modifiers its sync specs take, each one of the flags it owns (every family also takes the overlap and
  // compression modifiers, trainers/config/sync_spec.cpp).
  std::span<const SpecModifier> spec_modifiers = {};
};

// Its checks of a whole configuration (trainers/config/validate_config.hpp calls them).
struct FamilyChecks {
  // For a run on `ranks` processes: empty, or a one-line message naming the flag.
  std::string (*validate)(const TrainConfig& config, int ranks) = nullptr;
  // Against the training set of `train_rows` examples on `workers` workers, where they differ from every worker's
  // batch fitting its share (validate_against_data); nullptr: that check.
  std::string (*validate_against_data)(const TrainConfig& config, int workers, std::size_t train_rows) = nullptr;
  // Of --compress when one is given (the compressor's own checks have passed): empty, or a one-line message naming the
  // flag. nullptr: --compress is refused with this family.
  std::string (*check_compression)(const TrainConfig& config) = nullptr;
  // Why a run of `config` cannot re-form in place after a lost process (trainers/loop/in_place.hpp), a sentence for
  // "--recover inplace: ..."; empty, or nullptr, when it can.
  std::string (*in_place_refusal)(const TrainConfig& config) = nullptr;
};

// What runs name and report of it.
struct FamilyReport {
  // What its run name (TrainConfig::sync_name) adds to the --sync text: its settings, e.g. "-bsp-k2"; nullptr: none.
  std::string (*describe)(const TrainConfig& config) = nullptr;
  // Its part of the CSVs' dimensions (TrainConfig::sync_dimensions): the mode word of its own ("ssp", "async") and,
  // where the gradients are not summed by config.sync's allreduce, the method that sums them. nullptr: none.
  void (*dimensions)(const TrainConfig& config, SyncDimensions& d) = nullptr;
  // Its line about the run's setup on `ranks` processes, printed before training (gossip's graph, the clients of a
  // federated run); nullptr: none.
  std::string (*setup_line)(const TrainConfig& config, int ranks) = nullptr;
  // How many steps a worker may run ahead of the slowest (the epoch CSV's staleness_bound): -1 unbounded; nullptr:
  // the family has no such bound (every worker steps together, or no server keeps clocks).
  int (*staleness_bound)(const TrainConfig& config) = nullptr;
  // Whether the run's wire bytes are counted (TrainConfig::wire_bytes_counted: not when a library collective moves
  // them); nullptr: counted.
  bool (*wire_bytes_counted)(const TrainConfig& config) = nullptr;
  // Families that mix models over a graph: the spectral gap of its mixing matrix on `workers` ranks
  // (collectives/topology.hpp), which runs report; nullptr for the others.
  double (*spectral_gap)(const TrainConfig& config, int workers) = nullptr;
};

// How its ranks' parts are built, and the state a checkpoint plans for them.
struct FamilyBuild {
  // How many floats its synchronizers' save_state() writes on `workers` workers (the checkpoint's layout is planned
  // before they exist); nullptr: none.
  std::size_t (*state_size)(const TrainConfig& config, std::size_t parameter_count, int workers) = nullptr;
  // A step-based family (not shape.rounds): a worker's synchronizer; called on every worker rank, collective as
  // make_synchronizer says.
  std::unique_ptr<Synchronizer> (*make)(const TrainConfig& config, const SyncSetup& setup) = nullptr;
  // A round-based family (shape.rounds): a worker's round trainer, as make.
  std::unique_ptr<RoundTrainer> (*make_rounds)(const TrainConfig& config, const SyncSetup& setup) = nullptr;
  // With servers: a serving rank's role, on every server rank, while the workers call make (the two may talk).
  std::unique_ptr<ServerRole> (*make_server)(const TrainConfig& config, const ServerSetup& setup) = nullptr;
  // A step-based family with servers whose workers keep state that the servers checkpoint: a worker's side of
  // ServerRole::collect_worker_state, on the synchronizer make built. nullptr: none.
  void (*send_worker_state)(Synchronizer& worker) = nullptr;
  // With servers: how many servers hold each key range live, server s's range on servers s, s+1, ... (mod the
  // server count), as ServerRole::live_state() gives them to an in-place recovery; nullptr: 1, the primary alone.
  int (*key_range_holders)(const TrainConfig& config) = nullptr;
};

// A family's registry entry: its identity, then its fields grouped by what they are for.
struct SyncFamilyInfo {
  SyncFamily family;
  std::string_view name;  // its --sync text; empty for the family its allreduce methods name
  FamilyShape shape;
  FamilyFlags flags;
  FamilyChecks checks;
  FamilyReport report;
  FamilyBuild build;
};

// Every family, in SyncFamily's order.
std::span<const SyncFamilyInfo* const> sync_family_table();
const SyncFamilyInfo& sync_family(SyncFamily family);

}  // namespace gradsync
