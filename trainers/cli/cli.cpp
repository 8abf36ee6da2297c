#include "trainers/cli/cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <string_view>

#include "attacks/attack_spec.hpp"
#include "collectives/methods.hpp"
#include "collectives/robust/aggregator_spec.hpp"
#include "compression/compressors.hpp"
#include "model/models.hpp"
#include "trainers/cli/fault_flags.hpp"
#include "trainers/cli/flag_text.hpp"
#include "trainers/cli/observe_flags.hpp"
#include "trainers/cli/privacy_flags.hpp"
#include "trainers/cli/recovery_flags.hpp"
#include "trainers/cli/robust_flags.hpp"
#include "trainers/cli/spec_flags.hpp"
#include "trainers/core/sync_method.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/loop/data_source.hpp"

namespace gradsync {
namespace {

// What CLI11 reads as text or as a wider type, before it becomes TrainConfig's typed and checked values.
struct RawFlags {
  std::string sync = "serial", hidden = "128", iterations = "full", progress = "calls";
  std::string trace_steps;
  std::string batch;  // a count, or "all" (fedavg)
  std::string model, dataset;
  long chunk = 0, bucket_kib = 0, global_batch = 0;
  int pipeline = 0;
  std::uint64_t seed = 0;
  std::string compress;
  int error_feedback = 1;
  bool list_compressors = false;
  bool list_attacks = false;
  bool list_aggregators = false;
};

// What each family's flags read into during one parse (SyncFamilyInfo's flags.add), indexed by SyncFamily.
using FamilyFlagStates = std::array<std::unique_ptr<FlagState>, std::size(kSyncFamilyIds)>;

constexpr std::string_view kProgressNames[] = {"calls", "thread"};  // indexed by Progress

// The value whose name in `names` (indexed by the enum) is `text`; otherwise a usage error for `flag`.
template <class Enum>
Enum named(std::span<const std::string_view> names, const std::string& text, const char* flag, const std::string& why) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  throw CLI::ValidationError(flag, why);
}

// A check of --model and --dataset at parse time: the name is one of `find`'s registry, or the message says which
// names are.
template <class Find>
CLI::Validator one_of(Find find, std::string what, std::string names) {
  return CLI::Validator(
      [=](const std::string& text) {
        return find(text) ? std::string() : fmt::format("unknown {} '{}' (choose {})", what, text, names);
      },
      std::string());  // no type name in --help: the option's own text lists the names
}

// "softmax | mlp | ...: softmax: softmax regression; mlp: ...", from the one list of models.
std::string model_help() {
  std::string summaries;
  for (const ModelInfo& m : model_table())
    summaries += fmt::format("{}{}: {}", summaries.empty() ? "" : "; ", m.name, m.summary);
  return fmt::format("{} ({})", model_names(" | "), summaries);
}

void add_model_options(CLI::App& app, TrainConfig& c, RawFlags& raw) {
  app.add_option("--sync", raw.sync,
                 fmt::format("{} | an allreduce: {} (ps is the parameter-server trainer; bench_allreduce "
                             "--list-methods says what each allreduce is)",
                             sync_family_names(" | "), allreduce_method_names(trains, " | ")))
      ->capture_default_str();
  app.add_option("--model", raw.model, model_help())
      ->capture_default_str()
      ->check(one_of(find_model, "model", model_names(", ")));
  app.add_option("--hidden", raw.hidden, "mlp hidden widths, comma-separated (e.g. 256,128)")->capture_default_str();
  app.add_option("--epochs", c.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--batch", raw.batch, "batch size per worker (--sync fedavg: per client, or all)")
      ->capture_default_str();
  app.add_option("--lr", c.sgd.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", c.sgd.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", c.sgd.weight_decay, "L2 weight decay")->capture_default_str();
  app.add_option("--seed", raw.seed, "seed for initialization and shuffling")->capture_default_str();
  app.add_option("--dataset", raw.dataset, fmt::format("{}", fmt::join(kDatasetNames, " | ")))
      ->capture_default_str()
      ->check(one_of(find_dataset, "dataset", fmt::format("{}", fmt::join(kDatasetNames, ", "))));
  app.add_option("--data", c.data_dir,
                 fmt::format("directory with the four IDX files (raw or .gz); default {} ({} with --dataset fashion)",
                             default_data_dir(DatasetId::mnist), default_data_dir(DatasetId::fashion)));
  app.add_option("--iterations-per-epoch", raw.iterations,
                 "steps per epoch: full = rows/batch for every worker; auto = rows/(batch*workers), the lab's "
                 "constant total work, so runs on any np do equal work; or a count")
      ->capture_default_str();
  app.add_option("--average-every", c.average_every,
                 "local SGD: average the models every H steps (an exact allreduce method)");
  app.add_option(
      "--chunk-bytes", raw.chunk,
      "ring allreduce message size in bytes (default: 1 MiB when all ranks share a node, 16 MiB across hosts)");
  app.add_option("--global-batch", raw.global_batch,
                 "batch summed over all workers (instead of --batch): kept when a resumed run has fewer workers");
}

void add_overlap_options(CLI::App& app, TrainConfig& c, RawFlags& raw) {
  app.add_flag("--buckets", c.buckets,
               "allreduce the gradient in buckets as the backward pass finishes its layers (an allreduce method)");
  app.add_option("--bucket-kib", raw.bucket_kib,
                 "bucket size in KiB with --buckets (output layer first; a larger layer is cut between rows)")
      ->capture_default_str();
  app.add_option("--pipeline", raw.pipeline,
                 "1: pipelined SGD, step t's gradient synchronized while step t+1 is computed and applied one step "
                 "late (ps or an allreduce method)")
      ->capture_default_str();
  app.add_option("--progress", raw.progress,
                 "who moves overlapped communication on: calls (between kernels) | thread (a communication thread)")
      ->capture_default_str();
}

// Every family's own flags (SyncFamilyInfo's flags.add), in the registry's order; `states` keeps what they read into
// until the parse is over.
void add_family_options(CLI::App& app, TrainConfig& c, FamilyFlagStates& states) {
  for (const SyncFamilyInfo* family : sync_family_table())
    states[static_cast<std::size_t>(family->family)] = family->flags.add ? family->flags.add(app, c) : nullptr;
}

void add_outer_and_target_options(CLI::App& app, TrainConfig& c) {
  app.add_option("--outer-lr", c.outer_lr,
                 "--average-every: the outer optimizer's step on the averaged difference (1 with momentum 0: plain "
                 "averaging)")
      ->capture_default_str();
  app.add_option("--outer-momentum", c.outer_momentum, "--average-every: the outer optimizer's Nesterov momentum")
      ->capture_default_str();
  app.add_option("--target-accuracy", c.target_accuracy,
                 "report the time and steps at which the evaluated model first reaches this test accuracy");
  app.add_flag("--stop-at-target", c.stop_at_target,
               "with --target-accuracy: end the run after the epoch (round) that reached it (no checkpoint after it)");
}

void add_compression_options(CLI::App& app, RawFlags& raw) {
  app.add_option(
      "--compress", raw.compress,
      fmt::format("compress the gradients: {} (--list-compressors says what each does)", compressor_names(" | ")));
  app.add_option("--error-feedback", raw.error_feedback, "with --compress: 1 keeps each worker's residual, 0 drops it")
      ->capture_default_str();
  app.add_flag("--list-compressors", raw.list_compressors, "print the compressors, one a line, and exit");
  app.add_flag("--list-attacks", raw.list_attacks, "print the attacks (--attack), one a line, and exit");
  app.add_flag("--list-aggregators", raw.list_aggregators,
               "print the aggregators (--robust-aggregation), one a line, and exit");
}

// --compress and --error-feedback: text to a typed choice.
void take_compression(const CLI::App& app, const RawFlags& raw, TrainConfig& c) {
  if (raw.error_feedback != 0 && raw.error_feedback != 1)
    throw CLI::ValidationError("--error-feedback", fmt::format("is 0 or 1, got {}", raw.error_feedback));
  if (app.count("--compress") > 0) {
    std::string problem;
    const std::optional<CompressionChoice> choice = parse_compression(raw.compress, problem);
    if (!choice) throw CLI::ValidationError("--compress", problem);
    c.compression = *choice;
  }
  c.compression.error_feedback = raw.error_feedback == 1;
  c.compression.error_feedback_given = app.count("--error-feedback") > 0;
}

void add_run_options(CLI::App& app, TrainConfig& c) {
  app.add_option("--threads", c.threads, "BLIS threads per process")->capture_default_str();
  app.add_option("--csv", c.csv, "append a result row to this CSV file");
  app.add_option("--epoch-csv", c.epoch_csv, "append one row per epoch (time to accuracy, staleness) to this CSV file");
  app.add_flag("--quiet", c.quiet, "no per-epoch lines");
  app.add_option("--timeout", c.timeout_s, "abort the job if a rank waits on others longer than this (s; 0: never)")
      ->capture_default_str();
  app.add_option("--checkpoint", c.checkpoint_dir,
                 "this host's checkpoint directory (a local disk; \"%h\" is replaced by the host's name, or by "
                 "$GRADSYNC_HOST when set). Each checkpoint is written on --checkpoint-replicas hosts");
  app.add_option("--checkpoint-every", c.checkpoint_every,
                 "epochs between epoch-end checkpoints (0: only after the last epoch)")
      ->capture_default_str();
  app.add_option("--checkpoint-steps", c.checkpoint_steps,
                 "global steps between checkpoints (0: only at epoch ends, see --checkpoint-every); default: "
                 "--checkpoint-seconds");
  app.add_option("--checkpoint-seconds", c.checkpoint_seconds,
                 "seconds between checkpoints, turned into a step interval after timing the first 50 steps; give "
                 "--checkpoint-steps instead for checkpoints at the same steps in every run (--pipeline and asp/ssp "
                 "synchronize at each checkpoint)")
      ->capture_default_str();
  app.add_option("--checkpoint-replicas", c.checkpoint_replicas, "hosts that hold a complete copy of every checkpoint")
      ->capture_default_str();
  app.add_flag("--resume", c.resume,
               "continue from the newest complete checkpoint found in the hosts' --checkpoint directories (on any "
               "number of ranks)");
}

// --sync, the families' flags (SyncFamilyInfo's flags.take) and --progress: text to typed values.
void take_choices(const RawFlags& raw, const FamilyFlagStates& states, TrainConfig& c) {
  const std::optional<SyncMethod> sync = find_sync_method(raw.sync);
  if (!sync)
    throw CLI::ValidationError("--sync", fmt::format("unknown method '{}' (choose {} or an allreduce: {})", raw.sync,
                                                     sync_family_names(), allreduce_method_names(trains)));
  c.sync = *sync;
  c.model = find_model(raw.model);  // checked by the option (one_of)
  c.dataset = *find_dataset(raw.dataset);
  for (const SyncFamilyInfo* family : sync_family_table())
    if (family->flags.take) family->flags.take(states[static_cast<std::size_t>(family->family)].get(), c);
  c.progress = named<Progress>(kProgressNames, raw.progress, "--progress",
                               fmt::format("unknown '{}' (choose calls or thread)", raw.progress));
}

// The sizes and counts: checked, then converted.
void take_numbers(const CLI::App& app, const RawFlags& raw, TrainConfig& c) {
  const long batch = raw.batch == "all" ? 1 : positive_count(raw.batch);
  if (batch <= 0) throw CLI::ValidationError("--batch", fmt::format("'{}' is not a positive count or all", raw.batch));
  if (app.count("--chunk-bytes") > 0 && raw.chunk <= 0)
    throw CLI::ValidationError("--chunk-bytes", fmt::format("must be positive, got {}", raw.chunk));
  if (raw.bucket_kib <= 0)
    throw CLI::ValidationError("--bucket-kib", fmt::format("must be positive, got {}", raw.bucket_kib));
  if (raw.pipeline != 0 && raw.pipeline != 1)
    throw CLI::ValidationError("--pipeline", fmt::format("is 0 or 1, got {}", raw.pipeline));
  if (app.count("--global-batch") > 0) {
    if (raw.global_batch <= 0)
      throw CLI::ValidationError("--global-batch", fmt::format("must be positive, got {}", raw.global_batch));
    if (app.count("--batch") > 0)
      throw CLI::ValidationError("--global-batch", "give --batch (per worker) or --global-batch, not both");
    c.global_batch = static_cast<std::size_t>(raw.global_batch);
  }
  if (app.count("--checkpoint-seconds") > 0 && app.count("--checkpoint-steps") > 0)
    throw CLI::ValidationError("--checkpoint-seconds", "give --checkpoint-steps or --checkpoint-seconds, not both");
  if (app.count("--checkpoint-steps") > 0 && c.checkpoint_steps < 0)
    throw CLI::ValidationError("--checkpoint-steps", fmt::format("must be >= 0, got {}", c.checkpoint_steps));
  c.hidden = parse_widths(raw.hidden);
  c.iterations_per_epoch = parse_iterations(raw.iterations);
  c.bucket_bytes = static_cast<std::size_t>(raw.bucket_kib) << 10;
  c.pipeline = raw.pipeline == 1;
  c.batch = static_cast<std::size_t>(batch);
  c.fed.full_batch = raw.batch == "all";
  c.chunk_bytes = static_cast<std::size_t>(raw.chunk);
  c.seed = raw.seed;
}

// Flags that mean something only beside others, checked by whether they were given (validate() sees values only, and
// cannot tell a default from a choice): a flag that would be ignored, or a choice left to a default it has none of.
void check_given_flags(const CLI::App& app, const TrainConfig& c) {
  if (app.count("--hidden") > 0 && !c.model->hidden)
    throw CLI::ValidationError("--hidden", fmt::format("not with --model {}, whose layers are fixed (--model mlp takes "
                                                       "them)",
                                                       c.model->name));
  // Each family checks the flags it owns, on every run: one given to another family is refused there.
  const FlagGiven given = [&app](std::string_view flag) { return app.count(std::string(flag)) > 0; };
  for (const SyncFamilyInfo* family : sync_family_table())
    if (family->flags.check_given)
      if (const std::string problem = family->flags.check_given(c, given); !problem.empty())
        throw CLI::ValidationError(problem);
  if (app.count("--progress") > 0 && c.progress == Progress::thread && !c.buckets && !c.pipeline)
    throw CLI::ValidationError("--progress",
                               "thread moves overlapped communication on: only with --buckets or "
                               "--pipeline 1");
  if (app.count("--average-every") > 0 && c.average_every < 1)
    throw CLI::ValidationError("--average-every", fmt::format("must be >= 1, got {} (leave it out to average the "
                                                              "gradients every step)",
                                                              c.average_every));
  for (const char* flag : {"--outer-lr", "--outer-momentum"})
    if (app.count(flag) > 0 && c.average_every == 0 && !sync_family(c.sync.family).shape.rounds)
      throw CLI::ValidationError(flag,
                                 "only with --average-every H (the outer optimizer steps at each average) or "
                                 "--sync fedavg (the server's step)");
  if (c.threads < 1) throw CLI::ValidationError("--threads", fmt::format("must be >= 1, got {}", c.threads));
}

// CLI11's defaults for the flags it reads as text: the configuration's defaults, spelled as the flags spell them.
RawFlags raw_defaults(const TrainConfig& c) {
  RawFlags raw;
  raw.batch = std::to_string(c.batch);
  raw.chunk = static_cast<long>(c.chunk_bytes);
  raw.bucket_kib = static_cast<long>(c.bucket_bytes >> 10);
  raw.seed = c.seed;
  raw.model = c.model->name;
  raw.dataset = dataset_name(c.dataset);
  return raw;
}

// No training: after --help or --list-compressors (0), or an error (2).
CliOutcome ended(int exit_code, std::string message) {
  CliOutcome out;
  out.exit_code = exit_code;
  out.message = std::move(message);
  return out;
}

CliOutcome parse_spec(const CLI::App& app, const SpecFlags& f, const std::vector<std::string>& args);

// The flags `args` holds. `expanded`: the spec whose flags are among them, which an error then names after `context`
// (null: a command line, whose --spec is parsed here and its flags then parsed with the others).
CliOutcome parse_args(const std::vector<std::string>& args, const SyncSpec* expanded, std::string_view context) {
  TrainConfig c;
  CLI::App app{
      "gradsync train: data-parallel SGD on MNIST with a pluggable gradient synchronization.\n"
      "Run under mpirun for ring, mpi and ps; e.g. mpirun -n 2 build/bin/train --sync ring --model mlp",
      "train"};  // the program's name, for --help's usage line
  RawFlags raw = raw_defaults(c);
  add_model_options(app, c, raw);
  add_overlap_options(app, c, raw);
  FamilyFlagStates family_states;
  add_family_options(app, c, family_states);
  add_run_options(app, c);
  add_recovery_options(app, c);
  add_outer_and_target_options(app, c);
  add_compression_options(app, raw);
  FaultFlags faults;
  add_fault_options(app, c.faults, faults);
  RobustFlags robust;
  add_robust_options(app, c.robust, robust);
  add_observe_options(app, c.observe, raw.trace_steps);
  add_privacy_options(app, c.privacy);
  SpecFlags spec;
  add_spec_options(app, spec);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the last argument first
    app.parse(reversed);
    if (raw.list_compressors) return ended(0, compressor_listing());
    if (raw.list_attacks) return ended(0, attack_listing());
    if (raw.list_aggregators) return ended(0, aggregator_listing());
    if (!expanded && app.count("--spec") > 0) return parse_spec(app, spec, args);
    take_choices(raw, family_states, c);
    take_compression(app, raw, c);
    take_numbers(app, raw, c);
    take_faults(faults, c.faults);
    take_robust(robust, c.robust);
    check_given_flags(app, c);
    check_privacy_flags(app, c.privacy);
    for (const SyncFamilyInfo* family : sync_family_table())
      if (family->flags.take_checked)
        family->flags.take_checked(app, family_states[static_cast<std::size_t>(family->family)].get(), c);
    c.observe.window = parse_trace_window(raw.trace_steps);
  } catch (const CLI::CallForHelp&) {
    return ended(0, app.help());
  } catch (const CLI::ParseError& e) {
    return ended(2, expanded ? fmt::format("{}{}", context, expanded->explain(e.what())) : e.what());
  }
  return {c, 0, {}, spec.print_run, expanded ? std::optional<SyncSpec>(*expanded) : std::nullopt, flag_settings(app)};
}

// --spec: the flags it spells, parsed with the others of the command line.
CliOutcome parse_spec(const CLI::App& app, const SpecFlags& f, const std::vector<std::string>& args) {
  const SyncSpec spec = take_spec(app, f);
  std::vector<std::string> all = spec.flags;
  all.insert(all.end(), args.begin(), args.end());
  return parse_args(all, &spec, "--spec ");
}

}  // namespace

CliOutcome parse_train_args(std::vector<std::string> args) {
  CliOutcome out = parse_args(args, nullptr, {});
  if (out.exit_code != 0) out.message = fmt::format("train: error: {}", out.message);
  return out;
}

CliOutcome parse_train_cli(int argc, char** argv) {
  return parse_train_args(std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
}

std::optional<TrainConfig> spec_config(const SyncSpec& spec, std::string& problem) {
  CliOutcome out = parse_args(spec.flags, &spec, {});
  problem = out.config ? std::string() : out.message;
  return std::move(out.config);
}

}  // namespace gradsync
