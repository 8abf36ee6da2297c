#include "trainers/loop/trainer.hpp"

#include <fmt/format.h>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "collectives/fault_tolerance.hpp"
#include "collectives/mpi_error.hpp"
#include "collectives/watchdog.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/model.hpp"
#include "trainers/checkpoint/checkpoint_schedule.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/config/compression_checks.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/epoch_work.hpp"
#include "trainers/core/fault_injection.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/gradient_compression/compressed_jobs.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/epoch_loop.hpp"
#include "trainers/loop/in_place.hpp"
#include "trainers/loop/roles.hpp"
#include "trainers/loop/run_start.hpp"
#include "trainers/loop/run_trace.hpp"

namespace gradsync {

namespace {

// How the run's state is cut into checkpoint pieces: one per server, or one replicated on the workers. A
// synchronizer's own state (compression) follows the optimizer's in the replicated piece.
StateLayout state_layout(const TrainConfig& config, int ranks, const Model& model) {
  const std::size_t parameter_count = model.parameter_count();
  const int servers = config.server_ranks(), workers = config.worker_count(ranks);
  const SyncFamilyInfo& family = sync_family(config.sync.family);
  const std::size_t optimizer =
      (config.sgd.momentum != 0.0f ? parameter_count : 0) +
      (family.shape.compresses_itself ? 0 : compressed_state_size(config, model.layers(), workers)) +
      (family.build.state_size ? family.build.state_size(config, parameter_count, workers) : 0);
  return {parameter_count, optimizer, servers > 0, servers, ranks, workers, config.batch};
}

TrainResult empty_result(const TrainConfig& config, const Comm& world) {
  TrainResult result;
  result.sync_name = config.sync_name();
  result.model_name = config.model_name();
  result.ranks = world.size();
  result.workers = config.worker_count(world.size());
  return result;
}

// Rank 0: the run's last-epoch figures. wall_s (summed by report()) is this run's training time alone: after --resume
// it leaves out the time before the checkpoint, which the epochs' elapsed_s and the target's time count.
void summarize(TrainResult& result) {
  if (result.epochs.empty()) return;
  const EpochReport& final = result.epochs.back();
  result.train_loss = final.train_loss;
  result.test_accuracy = final.test_accuracy;
  result.images_per_s = result.examples / std::max(result.wall_s, 1e-12);
}

// The shared pieces of every attempt at a run (the first, and one after each in-place recovery).
struct RunParts {
  const TrainTest& data;
  const Model& model;
  const std::string& fingerprint;
  const EpochObserver& on_epoch;
  bool in_place;
};

// One attempt at the run on `world`, from the checkpoint or the seed (`recovered` empty) or from what a recovery
// agreed. True once the run is complete; false, with `live` holding this rank's state, when a process failed and
// the run re-forms in place (without in-place recovery the failure goes on up).
bool run_attempt(const TrainConfig& config, const RunParts& parts, const Comm& world,
                 const std::optional<ResumePoint>& recovered, const EpochCarry& carried, std::size_t& planned_batch,
                 TrainResult& result, LiveState& live, double& failed_at) {
  std::optional<Roles> roles;
  std::optional<EpochLoop> epochs;
  try {
    // A recovery that changed the per-worker batch (--global-batch over fewer workers) needs the kernel plan of the
    // new shapes: the start-up plan has none for them, and a run started on the survivors' count would use the
    // plan measured (or cached) for them, so the two would run other kernels and part bit for bit.
    if (config.batch != planned_batch) {
      install_agreed_kernel_plan(world, parts.model.planned_gemms(config.batch));
      planned_batch = config.batch;
      if (world.rank() == 0) {
        fmt::print("{} (re-planned for {} per worker)\n", kernels_summary(configured_blis()), config.batch);
        std::fflush(stdout);
      }
    }
    CheckpointSchedule schedule(config, world);
    const ResumePoint start =
        recovered ? *recovered : starting_point(config, world, schedule, parts.fingerprint, parts.model);
    const StateLayout state = state_layout(config, world.size(), parts.model);
    if (schedule.enabled()) schedule.open(parts.fingerprint, state, config.resume || recovered ? start.steps_done : -1);
    RunTrace trace(config.observe, world, config.progress == Progress::thread && (config.buckets || config.pipeline));
    roles.emplace(config, parts.data.train, parts.model, world, start);
    if (config.resume) check_resumed_state(start, *roles, config, world, state.pieces());
    epochs.emplace(config, parts.data, world, parts.model, *roles, schedule, start,
                   recovered ? start.history : starting_history(config, start), parts.in_place, carried);
    if (recovered || epochs->begin(result))
      for (int epoch = start.next_epoch; epoch < config.epochs; ++epoch)
        if (epochs->run(epoch, result, parts.on_epoch)) break;
    trace.finish();
    return true;
  } catch (const ProcessFailure&) {
    if (!parts.in_place) throw;
    failed_at = now_s();
    revoke_all();  // first: no rank stays blocked in a collective with the dead
    if (epochs) {
      epochs->take_live_state(live);
    } else if (recovered) {  // lost again while the roles were being re-formed: the recovery's point still holds
      live.params = recovered->params;
      live.optimizer = recovered->optimizer_state;
      live.applied = live.started = recovered->steps_done;
      live.next_epoch = recovered->next_epoch;
      live.epoch_examples = recovered->epoch_examples;
      live.history = recovered->history;
    } else {
      throw;  // before the first step: no state to re-form from; the job ends, as without ULFM
    }
    live.result = result;
    return false;
  }
}

// --respawn, on the survivors of a recovery: a successor for every lost rank, merged into `world` after them, given
// the point the run continues from; the kernel plan is then installed again with them (planned_batch 0). A failure
// while they join is one more failure: the next attempt meets it and recovers.
void grow(Comm& world, TrainConfig& config, RecoveryReport& report, ResumePoint& point, TrainResult& result,
          std::vector<int>& job_ranks, std::vector<std::string>& hosts, std::size_t& planned_batch) {
  const double start = now_s();
  const int before = world.size();
  try {
    // Under the watchdog: Open MPI 5.0.7 can leave a join across hosts waiting forever (a second successor whose
    // peers on another host cannot reach it; seen on the emulated hosts), which must end as a report naming it.
    const WaitScope wait("the successors' join (MPI_Comm_spawn, MPI_Intercomm_merge, MPI_Comm_dup, the hand-over)");
    Comm grown = spawn_successors(world, static_cast<int>(report.lost.size()), config.command);
    share_with_successors(grown, false, report.lost, point, result, job_ranks, hosts, config.servers);
    world = grown;
  } catch (const ProcessFailure&) {
    revoke_all();
    return;                          // the run goes on without them; the failure reaches the next attempt
  } catch (const SpawnRefused& e) {  // every survivor alike: the launcher has nowhere to start them
    if (world.rank() == 0) {
      fmt::print(
          "train: note: no successor joined ({}; has the launcher a free slot? give it spare slots or "
          "--oversubscribe); continuing on {} ranks\n",
          e.what(), world.size());
      std::fflush(stdout);
    }
    return;
  }
  planned_batch = 0;
  report.joined = world.size() - before;
  report.join_seconds = now_s() - start;  // rank 0's: the successors make no such call
  if (world.rank() == 0) {
    fmt::print("{}\n", format_join(report, world.size(), config.worker_count(world.size()),
                                   std::span(job_ranks).last(static_cast<std::size_t>(report.joined)), hosts));
    std::fflush(stdout);
  }
}

}  // namespace

std::string in_place_refusal(const TrainConfig& config) {
  const auto refusal = sync_family(config.sync.family).checks.in_place_refusal;
  return refusal ? refusal(config) : std::string();
}

bool recovers_in_place(const TrainConfig& config) {
  if (config.recover == Recover::abort || !ulfm_enabled()) return false;
  return in_place_refusal(config).empty();
}

TrainResult train(const TrainConfig& given, const TrainTest& data, const Comm& job, const EpochObserver& on_epoch) {
  TrainConfig config = given;
  config.batch = given.per_worker_batch(job.size());  // --global-batch, resolved for this world
  const std::unique_ptr<Model> owned =
      make_model(config, data.train.features, static_cast<std::size_t>(data.train.classes));
  const Model& model = *owned;
  if (const std::string problem = validate_against_model(config, model.layers()); !problem.empty())
    throw std::invalid_argument(problem);  // train_main checks first; the same on every rank, before any message
  const std::string fingerprint = run_fingerprint(config, model.describe());
  const RunParts parts{data, model, fingerprint, on_epoch, recovers_in_place(config)};
  Comm world = job;
  std::vector<int> job_ranks;
  std::vector<std::string> hosts;
  if (parts.in_place && !config.successor) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    job_ranks = world.all_gather(std::vector<int>{me});
    hosts = host_names(world);
  }
  TrainResult result = empty_result(config, world);
  result.target_accuracy = config.target_accuracy;
  result.rounds = sync_family(config.sync.family).shape.rounds;
  std::optional<ResumePoint> recovered;
  EpochCarry carried;
  std::size_t planned_batch = config.batch;  // the batch of the installed kernel plan (train_main's, at start-up)
  if (config.successor) {  // joining a run in flight: its state from the survivors, and its kernel plan with them
    ResumePoint point;
    share_with_successors(world, true, {}, point, result, job_ranks, hosts, config.servers);
    // Kills name job ranks: this process now answers to the one it replaced, from the steps it has yet to begin.
    set_job_rank(job_ranks[static_cast<std::size_t>(world.rank())]);
    std::erase_if(config.faults.kills, [&](const FaultInjection::Kill& k) { return k.step <= point.steps_done; });
    recovered = std::move(point);
    planned_batch = 0;
  }
  for (;;) {
    LiveState live;
    double failed_at = 0;
    if (run_attempt(config, parts, world, recovered, carried, planned_batch, result, live, failed_at)) break;
    RecoveryReport report;
    recovered = reform_after_failure(world, job_ranks, hosts, live, config, failed_at, report);
    carried = {live.epoch_work, live.epoch_started_at};  // the recovery's own time counts in the epoch's
    if (live.epoch_reported) carried = {};               // its epoch is over: the next starts afresh
    result = std::move(live.result);
    if (sync_family(config.sync.family).shape.servers) config.servers = report.servers_after;  // they serve every range
    if (world.rank() == 0) {
      fmt::print("{}\n", format_recovery(report));
      std::fflush(stdout);
    }
    if (config.respawn) grow(world, config, report, *recovered, result, job_ranks, hosts, planned_batch);
    result.recoveries.push_back(report);
    config.batch = given.per_worker_batch(world.size());
    config.resume = false;  // the state is the recovery's, in memory
    result.ranks = world.size();
    result.workers = config.worker_count(world.size());
  }
  result.reports = world.rank() == 0;
  if (result.reports) summarize(result);
  return result;
}

}  // namespace gradsync
