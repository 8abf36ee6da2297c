#include "trainers/loop/in_place.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "collectives/fault_tolerance.hpp"
#include "collectives/mpi_error.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/loop/key_range_recovery.hpp"

namespace gradsync {
namespace {

// Root's `value` on every rank of `comm`, for plain structs (ReportHistory, EpochReport) sent as their bytes: the
// ranks run one binary, so the layout is the same everywhere.
template <class T>
void broadcast_bytes(const Comm& comm, std::vector<T>& values, int root) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::int64_t n = static_cast<std::int64_t>(values.size());
  n = comm.broadcast(n, root);
  values.resize(static_cast<std::size_t>(n));
  std::vector<char> bytes(values.size() * sizeof(T));
  if (comm.rank() == root && !bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  if (!bytes.empty()) comm.broadcast(std::span<char>(bytes), root);
  if (!bytes.empty()) std::memcpy(static_cast<void*>(values.data()), bytes.data(), bytes.size());
}

template <class T>
void broadcast_one(const Comm& comm, T& value, int root) {
  std::vector<T> one{value};
  broadcast_bytes(comm, one, root);
  value = one.front();
}

void broadcast_floats(const Comm& comm, std::vector<float>& values, int root) {
  std::int64_t n = comm.broadcast(static_cast<std::int64_t>(values.size()), root);
  values.resize(static_cast<std::size_t>(n));
  if (n > 0) comm.broadcast(std::span<float>(values), root);
}

// The run's sums so far, which TrainResult keeps beside its epochs.
struct ResultSums {
  long steps = 0;
  double wall_s = 0, compute_s = 0, sync_s = 0, hidden_s = 0, wire_bytes = -1, examples = 0, resumed_s = 0;
};

}  // namespace

void broadcast_result(const Comm& comm, TrainResult& r, int root) {
  broadcast_bytes(comm, r.epochs, root);
  ResultSums s{r.steps, r.wall_s, r.compute_s, r.sync_s, r.hidden_s, r.wire_bytes, r.examples, r.resumed_s};
  broadcast_one(comm, s, root);
  r.steps = s.steps;
  r.wall_s = s.wall_s;
  r.compute_s = s.compute_s;
  r.sync_s = s.sync_s;
  r.hidden_s = s.hidden_s;
  r.wire_bytes = s.wire_bytes;
  r.examples = s.examples;
  r.resumed_s = s.resumed_s;
}

namespace {

// attempt()'s refusals, from what every survivor gathered: the same on each of them.
[[noreturn]] void refuse(const Comm& survivors, const std::string& why) {
  throw InPlaceRecoveryError(why, survivors.rank() == 0);
}

// Where the survivors stand, from the holder of the newest step.
struct Position {
  std::int64_t applied = 0, epoch_examples = 0;
  int next_epoch = 0;
  bool epoch_reported = false;
};

// One attempt at the recovery on the ranks of `world` still alive. Throws ProcessFailure if another rank fails
// during it (every survivor then learns it from the closing agreement, so all try again together).
ResumePoint attempt(Comm& world, std::vector<int>& world_ranks, const std::vector<std::string>& hosts, LiveState& mine,
                    const TrainConfig& config, double failed_at, RecoveryReport& report) {
  const int my_world_rank = world_ranks[static_cast<std::size_t>(world.rank())];
  Comm survivors = shrink(world);
  const std::vector<int> alive = survivors.all_gather(std::vector<int>{my_world_rank});
  std::vector<int> lost;
  for (const int r : world_ranks)
    if (std::ranges::find(alive, r) == alive.end()) lost.push_back(r);
  // A family with servers keeps its model on them, key range by key range: the survivors rebuild it at the newest
  // step every range has. The others: the newest step any survivor finished. Then, among the holders of that step,
  // the one that has reported the most epochs (a rank may have taken the epoch's report that another missed); the
  // lowest rank of those.
  const SyncFamilyInfo& family = sync_family(config.sync.family);
  int servers = config.server_ranks();
  std::int64_t newest = 0;
  if (family.shape.servers) {
    const int holders = family.build.key_range_holders ? family.build.key_range_holders(config) : 1;
    const KeyRangeRecovery ranges = recover_key_ranges(survivors, servers, holders, mine);
    newest = ranges.step;
    servers = ranges.servers_left;
  } else {
    newest = survivors.max(mine.applied);
  }
  const std::int64_t begun = survivors.max(mine.started);
  const std::int64_t reported =
      survivors.max(mine.applied == newest ? static_cast<std::int64_t>(mine.result.epochs.size()) : std::int64_t{-1});
  const bool holds = mine.applied == newest && static_cast<std::int64_t>(mine.result.epochs.size()) == reported;
  const int source = survivors.min(holds ? survivors.rank() : INT_MAX);

  Position where{mine.applied, mine.epoch_examples, mine.next_epoch, mine.epoch_reported};
  broadcast_one(survivors, where, source);
  broadcast_one(survivors, mine.history, source);
  broadcast_result(survivors, mine.result, source);
  // A rank keeping its own replica keeps it (gossip re-forms its graph over the survivors' models); the others take
  // the newest step's model and optimizer state from its holder.
  const bool own = survivors.min(mine.own_replica ? 1 : 0) == 1;
  if (!own && !family.shape.servers) {
    broadcast_floats(survivors, mine.params, source);
    broadcast_floats(survivors, mine.optimizer, source);
  }
  const int workers = survivors.size() - servers;
  if (workers < 1)
    refuse(survivors, fmt::format("in-place recovery: {} rank(s) left, and this run needs {} server(s) and a worker",
                                  survivors.size(), servers));
  if (config.global_batch > 0 && config.global_batch % static_cast<std::size_t>(workers) != 0)
    refuse(survivors,
           fmt::format(
               "in-place recovery: --global-batch {} cannot be shared by the {} workers left (it must be a multiple of "
               "their count); the run stops at step {}",
               config.global_batch, workers, newest));
  // Every survivor leaves together or none does: a failure during the copies shows here on every one of them.
  agree(survivors, 1);

  report.lost = lost;
  report.hosts.clear();
  for (const int r : lost)
    report.hosts.push_back(static_cast<std::size_t>(r) < hosts.size() ? hosts[static_cast<std::size_t>(r)] : "?");
  report.ranks_before = world.size();
  report.ranks_after = survivors.size();
  report.workers_after = workers;
  report.servers_after = servers;
  report.resumed_step = newest;
  report.lost_steps = std::max<std::int64_t>(0, begun - newest);
  report.seconds = survivors.max(now_s() - failed_at);
  world = survivors;
  world_ranks = alive;

  ResumePoint point;
  point.params = mine.params;
  point.optimizer_state = mine.optimizer;
  point.steps_done = where.applied;
  point.next_epoch = where.next_epoch + (where.epoch_reported ? 1 : 0);
  point.epoch_examples = where.epoch_reported ? 0 : where.epoch_examples;
  point.history = mine.history;
  return point;
}

}  // namespace

ResumePoint reform_after_failure(Comm& world, std::vector<int>& world_ranks, const std::vector<std::string>& hosts,
                                 LiveState& mine, const TrainConfig& config, double failed_at, RecoveryReport& report) {
  for (;;) {
    try {
      return attempt(world, world_ranks, hosts, mine, config, failed_at, report);
    } catch (const ProcessFailure&) {
      revoke_all();  // a second failure during the recovery: start again on the ranks still alive
    }
  }
}

void share_with_successors(const Comm& world, bool successor, std::span<const int> lost, ResumePoint& point,
                           TrainResult& result, std::vector<int>& job_ranks, std::vector<std::string>& hosts,
                           int& servers) {
  servers = world.broadcast(servers, 0);
  if (world.rank() == 0) job_ranks.insert(job_ranks.end(), lost.begin(), lost.end());
  broadcast_bytes(world, job_ranks, 0);
  std::int64_t known = world.broadcast(static_cast<std::int64_t>(hosts.size()), 0);
  hosts.resize(static_cast<std::size_t>(known));
  for (std::string& h : hosts) world.broadcast_string(h, 0);
  const std::vector<std::string> here = host_names(world);  // where the successors run
  for (int r = 0; r < world.size(); ++r) {
    const auto job = static_cast<std::size_t>(job_ranks[static_cast<std::size_t>(r)]);
    if (job >= hosts.size()) hosts.resize(job + 1, "?");
    hosts[job] = here[static_cast<std::size_t>(r)];
  }
  broadcast_result(world, result, 0);
  // The point: a survivor sends or takes part with a copy, and keeps its own.
  ResumePoint sent = point;
  Position where{sent.steps_done, sent.epoch_examples, sent.next_epoch, false};
  broadcast_one(world, where, 0);
  broadcast_one(world, sent.history, 0);
  broadcast_floats(world, sent.params, 0);
  broadcast_floats(world, sent.optimizer_state, 0);
  if (!successor) return;
  point = std::move(sent);
  point.steps_done = where.applied;
  point.epoch_examples = where.epoch_examples;
  point.next_epoch = where.next_epoch;
}

std::string format_recovery(const RecoveryReport& r) {
  std::vector<std::string> lost;
  for (std::size_t i = 0; i < r.lost.size(); ++i) lost.push_back(fmt::format("{} (host {})", r.lost[i], r.hosts[i]));
  const std::string servers =
      r.servers_after > 0 ? fmt::format("{} server{}, ", r.servers_after, r.servers_after == 1 ? "" : "s") : "";
  return fmt::format(
      "recovered in place: lost rank{} {}; continuing on {} rank{} ({}{} worker{}) from step {}, {} step{} done again; "
      "{:.3f} s from the failure to the re-formed run",
      r.lost.size() == 1 ? "" : "s", fmt::join(lost, ", "), r.ranks_after, r.ranks_after == 1 ? "" : "s", servers,
      r.workers_after, r.workers_after == 1 ? "" : "s", r.resumed_step, r.lost_steps, r.lost_steps == 1 ? "" : "s",
      r.seconds);
}

std::string format_join(const RecoveryReport& r, int ranks_now, int workers_now, std::span<const int> successors,
                        const std::vector<std::string>& hosts) {
  std::vector<std::string> names;
  for (const int j : successors)
    names.push_back(fmt::format("{} (host {})", j, static_cast<std::size_t>(j) < hosts.size() ? hosts[j] : "?"));
  return fmt::format(
      "joined in place: {} successor{} for rank{} {}; continuing on {} rank{} ({} worker{}); {:.3f} s to spawn and "
      "hand over the run",
      r.joined, r.joined == 1 ? "" : "s", successors.size() == 1 ? "" : "s", fmt::join(names, ", "), ranks_now,
      ranks_now == 1 ? "" : "s", workers_now, workers_now == 1 ? "" : "s", r.join_seconds);
}

std::vector<std::string> host_names(const Comm& world) {
  std::array<char, 64> mine{};
  gethostname(mine.data(), mine.size() - 1);
  const std::vector<char> all = world.all_gather(std::span<const char>(mine));
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * mine.size());
  return hosts;
}

}  // namespace gradsync
