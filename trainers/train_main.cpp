// build/bin/train: parse flags, choose BLIS kernels, start MPI, load data, train, report.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/auto_explain.hpp"
#include "collectives/comm.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/fault_tolerance.hpp"
#include "collectives/mpi_session.hpp"
#include "collectives/watchdog.hpp"
#include "cpu/isa.hpp"
#include "model/checkpoint.hpp"
#include "model/idx_reader.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/model.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/cli/run_settings.hpp"
#include "trainers/cli/settings_agreement.hpp"
#include "trainers/config/compression_checks.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/data_source.hpp"
#include "trainers/loop/in_place.hpp"
#include "trainers/loop/run_trace.hpp"
#include "trainers/loop/trainer.hpp"
#include "trainers/report/csv_target.hpp"
#include "trainers/report/privacy_report.hpp"
#include "trainers/report/report.hpp"
#include "trainers/report/robustness_report.hpp"

namespace {

constexpr int kUsageError = 2;
constexpr int kRuntimeError = 1;

// An error about the flags, naming the --spec modifier behind the flag it names.
std::string explained(const gradsync::CliOutcome& cli, const std::string& problem) {
  return cli.spec ? fmt::format("--spec {}", cli.spec->explain(problem)) : problem;
}

// --print-run: the run's name and the fewest ranks it runs on, for the drivers that take specs (scripts/common.sh).
int print_run(const gradsync::CliOutcome& cli) {
  std::string problem;
  const int ranks = gradsync::fewest_ranks(*cli.config, problem);
  if (ranks == 0) {
    fmt::print(stderr, "train: error: {} (refused on every rank count up to {})\n", explained(cli, problem),
               gradsync::kMostRanks);
    return kUsageError;
  }
  fmt::print("{}\t{}\n", cli.config->sync_name(), ranks);
  return 0;
}

// --recover inplace where the run cannot recover in place: the reason, naming the flag; empty otherwise.
std::string check_recovery(const gradsync::TrainConfig& config) {
  using namespace gradsync;
  if (recovers_in_place(config)) return {};
  const std::string why = !ulfm_enabled()                    ? ulfm_missing_reason()
                          : config.recover == Recover::abort ? std::string("--recover abort ends the job instead")
                                                             : in_place_refusal(config);
  if (config.recover == Recover::in_place) return fmt::format("--recover inplace: {}", why);
  if (config.respawn) return fmt::format("--respawn: successors join only a run that recovers in place: {}", why);
  return {};
}

// A process --respawn started (MPI_Comm_spawn) to replace a lost rank: it joins the survivors' run over `world`,
// the merged communicator, and trains with them; the survivors report. Its command line is theirs, checked there.
int run_successor(gradsync::TrainConfig config, const gradsync::Comm& world) {
  using namespace gradsync;
  config.successor = true;
  // As the survivors run: with a watchdog, the collectives' agreement checks are polled point-to-point messages, not
  // an MPI_Allreduce the survivors would never join.
  start_watchdog(config.timeout_s, world.rank());
  const TrainTest data = load_training_data(config);
  train(config, data, world);
  return 0;
}

// This program and its arguments, to start again as a successor: the executable by its absolute path
// (/proc/self/exe), since the spawned process may start elsewhere than the launcher's directory.
std::vector<std::string> own_command(int argc, char** argv) {
  std::vector<std::string> command;
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  command.emplace_back(n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string(argv[0]));
  for (int i = 1; i < argc; ++i) command.emplace_back(argv[i]);
  return command;
}

// `cli`: the command line `config` came from, whose --spec names the modifier behind a refused flag.
int run(const gradsync::TrainConfig& config, const gradsync::BlisConfig& blis, const gradsync::CliOutcome& cli) {
  using namespace gradsync;
  const Comm world = Comm::world();
  const bool lead = world.rank() == 0;
  if (const std::string problem = validate(config, world.size()); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", explained(cli, problem));
    return kUsageError;
  }
  // A straggler that sleeps past the watchdog's limit is how tests stage a hung rank; anyone else gets warned.
  if (lead && config.faults.straggler_rank != -1 && config.timeout_s > 0 &&
      config.faults.straggler_ms >= config.timeout_s * 1000)
    fmt::print(stderr,
               "train: note: --straggler sleeps {} ms per step, at least the --timeout of {} s: the watchdog "
               "will stop the job (raise --timeout, or 0 to turn it off)\n",
               config.faults.straggler_ms, config.timeout_s);
  if (const std::string problem = check_trace_file(config.observe, world); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  if (const std::string problem = check_recovery(config); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  start_watchdog(config.timeout_s, world.rank());
  const std::optional<TrainTest> loaded = load_training_data_on_every_rank(config, world, "train");
  if (!loaded) return kUsageError;
  const TrainTest& data = *loaded;
  if (const std::string problem = validate_against_data(config, world.size(), data.train.rows); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  if (const std::string problem = validate_model_against_data(config, data.train.features); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  const std::unique_ptr<Model> model =
      make_model(config, data.train.features, static_cast<std::size_t>(data.train.classes));
  if (const std::string problem = validate_against_model(config, model->layers()); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  if (const std::string problem = check_eval_attack(config, *model); !problem.empty()) {
    if (lead) fmt::print(stderr, "train: error: {}\n", problem);
    return kUsageError;
  }
  if (lead) {
    fmt::print(
        "gradsync train: {} {} ({} parameters) on {} ({} train / {} test images), {} rank(s), batch {} per "
        "worker{}, lr {}, seed {}\n{}\n",
        config.sync_name(), config.model_name(), model->parameter_count(), dataset_name(config.dataset), data.train.rows,
        data.test.rows, world.size(), config.per_worker_batch(world.size()),
        config.global_batch > 0 ? fmt::format(" (global batch {})", config.global_batch) : std::string(), config.sgd.lr,
        config.seed, kernels_summary(blis));
    if (const std::string setup = describe_family(config, world.size()); !setup.empty()) fmt::print("{}\n", setup);
    if (const std::string byzantine = describe_robustness(config, world.size()); !byzantine.empty())
      fmt::print("{}\n", byzantine);
    if (const std::string privacy = format_privacy_setup(config, world.size(), data.train.rows, model->parameter_count());
        !privacy.empty())
      fmt::print("{}\n", privacy);
    std::fflush(stdout);
  }
  TrainResult result;
  try {
    result = train(config, data, world, [&](const EpochReport& r) {
      if (!config.quiet) {
        fmt::print("{}\n", format_epoch(r));
        std::fflush(stdout);
      }
      if (!config.epoch_csv.empty()) append_epoch_csv(config.epoch_csv, config, world.size(), r);
    });
  } catch (const CheckpointError& e) {  // thrown on every rank together (resume) : a usage error, not a crash
    if (lead) fmt::print(stderr, "train: error: {}\n", e.what());
    return kUsageError;
  } catch (const InPlaceRecoveryError& e) {  // every survivor together: each ends on its own, without MPI_Abort
    if (e.lead) fmt::print(stderr, "train: error: {}\n", e.what());
    return kRuntimeError;
  }
  if (result.reports) {  // rank 0 of the last world: a recovery may have lost world rank 0
    fmt::print("{}\n", format_summary(result));
    for (const std::string& line : robustness_lines(config, *model, result.params, data)) fmt::print("{}\n", line);
    if (!result.recoveries.empty()) fmt::print("{}\n", format_recoveries(result));
    if (const std::string target = format_target(result); !target.empty()) fmt::print("{}\n", target);
    if (const std::string privacy = format_privacy_spent(config, result); !privacy.empty()) fmt::print("{}\n", privacy);
    if (config.observe.explain) fmt::print("auto's choices on rank 0:\n{}", format_auto_choices(auto_choices()));
    if (!config.csv.empty() && !result.epochs.empty()) append_csv(config.csv, config, result);  // no row of zeros
  }
  return 0;
}

// Every rank's flags, environment and data compared, before anything else is sent (settings_agreement.hpp): ""
// when they match on every rank, else on every rank the reason (rank 0's names the first difference).
std::string settings_problem(const gradsync::CliOutcome& cli, const gradsync::Comm& world) {
  using namespace gradsync;
  if (world.size() == 1) return {};  // no one to differ from: no need to read the data through
  std::vector<Setting> mine = cli.flags;
  for (std::vector<Setting> part : {environment_settings(), data_settings(*cli.config)})
    mine.insert(mine.end(), part.begin(), part.end());
  return agree_on_settings(world, mine);
}

// A refusal every rank reached together: rank 0 prints `line`, then every rank returns exit 2, but only once rank 0
// has printed (a launcher ends the job at the first non-zero exit, rank 0's line with it). Collective over the world.
int refuse_together(const gradsync::MpiSession& mpi, const std::string& line) {
  if (mpi.world_rank() == 0) {
    fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
  }
  gradsync::Comm::world().barrier();
  gradsync::MpiSession::set_exit_code(kUsageError);
  return kUsageError;
}

// agree_on_parsing over `world`, skipped on one rank (no one else to name).
std::string parsing_problem(const gradsync::Comm& world, const std::string& mine) {
  return world.size() == 1 ? mine : gradsync::agree_on_parsing(world, mine);
}

// A rank whose own command line did not parse, under a launcher: it starts MPI like the others and meets them in the
// parsing agreement, so that rank 0 prints the error once whichever rank's line it was in, and every rank exits with
// its status together. Leaving before MPI_Init instead hangs MPICH's Hydra (rank 0 waits there for it) and, under
// Open MPI, ends the job before rank 0 can say why when only another rank's line is wrong (an MPMD launch).
int meet_unparsed(int& argc, char**& argv, const gradsync::CliOutcome& cli) {
  const gradsync::MpiSession mpi(argc, argv, MPI_THREAD_SERIALIZED);
  try {
    const std::string line = parsing_problem(gradsync::Comm::world(), cli.message);
    if (mpi.world_rank() == 0) {
      fmt::print(stderr, "{}\n", line.empty() ? cli.message : line);
      std::fflush(stderr);
    }
    gradsync::Comm::world().barrier();  // rank 0's line out before any rank's non-zero exit ends the job
  } catch (const std::exception& e) {
    fmt::print(stderr, "train: error (rank {}): {}\n", mpi.world_rank(), e.what());
  }
  gradsync::MpiSession::set_exit_code(cli.exit_code);
  return cli.exit_code;
}

// Rank 0's cheap checks of what the run will read and write besides the data, before the kernels are measured or
// the data loaded: the tuning file auto reads (rank 0's is the one read) and the CSV files only rank 0 appends to.
// "" when they pass; else rank 0's line (every other rank's is "" too: it learns the verdict from the all_ok).
std::string rank0_problem(const gradsync::TrainConfig& config) {
  using namespace gradsync;
  if (std::string problem = tuning_variable_problem(); !problem.empty()) return problem;
  if (!config.csv.empty())
    if (std::string problem = csv_target_problem("--csv", config.csv, kTrainCsvHeader); !problem.empty()) return problem;
  if (!config.epoch_csv.empty())
    if (std::string problem = csv_target_problem("--epoch-csv", config.epoch_csv, kEpochCsvHeader); !problem.empty())
      return problem;
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const gradsync::CliOutcome cli = gradsync::parse_train_cli(argc, argv);
  // Ranks are not known before MPI_Init; the launcher tells each process its rank in the environment: Open MPI's
  // mpirun as OMPI_COMM_WORLD_RANK, MPICH's Hydra (and other PMI launchers) as PMI_RANK, PMIx ones as PMIX_RANK.
  static constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
  const char* env_rank = nullptr;
  for (const char* name : kRankVariables) {
    if ((env_rank = std::getenv(name)) != nullptr) break;
  }
  const bool lead = env_rank == nullptr || std::atoi(env_rank) == 0;
  if (!cli.config && cli.exit_code != 0 && env_rank != nullptr) return meet_unparsed(argc, argv, cli);
  if (!cli.config) {
    if (lead) {
      // A listing ends its own lines; one more newline would give the reader of --list-* an empty entry.
      const bool ended = !cli.message.empty() && cli.message.back() == '\n';
      fmt::print(cli.exit_code == 0 ? stdout : stderr, "{}{}", cli.message, ended ? "" : "\n");
    }
    return cli.exit_code;
  }
  if (cli.print_run) return lead ? print_run(cli) : 0;
  gradsync::refuse_bad_isa_request("train", lead);
  const gradsync::BlisConfig blis = gradsync::configure_blis(cli.config->threads);  // before MPI_Init: it forks
  // Serialized: an overlap run's communication thread makes MPI calls while this thread makes none.
  const gradsync::MpiSession mpi(argc, argv, MPI_THREAD_SERIALIZED);
  gradsync::TrainConfig config = *cli.config;
  config.command = own_command(argc, argv);  // what --respawn starts
  try {
    // A successor's join waits on the survivors from its MPI_Init on: under the watchdog from the start (the join's
    // own scope; a later start_watchdog only sets the rank it reports).
    gradsync::start_watchdog(config.timeout_s, mpi.world_rank());
    std::optional<gradsync::Comm> joined;
    {
      const gradsync::WaitScope wait("joining the survivors as a successor (MPI_Intercomm_merge, MPI_Comm_dup)");
      joined = gradsync::join_as_successor();
    }
    if (joined) {
      const int code = run_successor(config, *joined);
      gradsync::MpiSession::set_exit_code(code);
      return code;
    }
    if (const std::string line = parsing_problem(gradsync::Comm::world(), ""); !line.empty())
      return refuse_together(mpi, line);
    if (const std::string problem = settings_problem(cli, gradsync::Comm::world()); !problem.empty())
      return refuse_together(mpi, "train: error: " + problem);
    const std::string early = mpi.world_rank() == 0 ? rank0_problem(*cli.config) : std::string();
    if (!gradsync::Comm::world().all_ok(early.empty()))  // every rank together: no one waits for a rank that left
      return refuse_together(mpi, "train: error: " + early);
    gradsync::install_agreed_kernel_plan(gradsync::Comm::world(), config);  // every rank: one plan
    const int code = run(config, blis, cli);
    gradsync::MpiSession::set_exit_code(code);
    return code;
  } catch (const gradsync::KernelPlanError& e) {  // thrown on every rank together, as run()'s usage errors return
    if (mpi.world_rank() == 0) fmt::print(stderr, "train: error: {}\n", e.what());
    return kUsageError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "train: error (rank {}): {}\n", mpi.world_rank(), e.what());
    std::fflush(stderr);
    // MPI_Abort tears the job down at once, and a launcher may drop output it has not forwarded yet (MPICH's Hydra
    // lost this very line in a CI run): give the line time to reach the terminal before the job ends.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gradsync::MpiSession::abort(kRuntimeError);
  }
}
