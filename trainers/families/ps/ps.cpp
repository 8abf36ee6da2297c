// --sync ps: the parameter-server trainer (trainers/families/ps/ps_training.hpp). World ranks 0..servers-1 serve, the
// rest work.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <algorithm>

#include "collectives/methods.hpp"
#include "compression/compressors.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/families/ps/ps_training.hpp"

namespace gradsync {
namespace {

std::string validate_ps(const TrainConfig& c, int ranks) {
  if (ranks < 2) return "--sync ps needs at least 2 ranks (1 server + 1 worker); run it under mpirun -n 2 or more";
  if (c.servers < 1 || c.servers >= ranks)
    return fmt::format("--servers {}: needs 1 <= servers < ranks ({}), leaving at least one worker", c.servers, ranks);
  const PsOptions& o = ps_options(c);
  if (o.staleness < 0) return "--staleness: must be >= 0";
  if (o.replicas < 1 || o.replicas > c.servers)
    return fmt::format("--replicas {}: needs 1 <= replicas <= servers ({}): each key range lives on that many of them",
                       o.replicas, c.servers);
  if (o.mode != PsMode::bsp)
    for (const FaultInjection::Kill& k : c.faults.kills)
      if (k.rank < c.servers)
        return fmt::format("--inject-kill: rank {} is a server, which only --ps-mode bsp kills (at a round's start)",
                           k.rank);
  if (o.replicas > 1 && o.mode != PsMode::bsp)
    return fmt::format(
        "--replicas {}: live replicas follow bsp's rounds (each takes the round's sum from the range's primary); "
        "--ps-mode {} moves a range one gradient at a time and has none yet",
        o.replicas, ps_mode_name(o.mode));
  return {};
}

// BSP's servers keep each range's state one round back, so the survivors of a lost rank find every range at one
// step; asp and ssp have no such step.
std::string ps_in_place_refusal(const TrainConfig& c) {
  const PsMode mode = ps_options(c).mode;
  if (mode == PsMode::bsp) return {};
  return fmt::format(
      "--ps-mode {} does not re-form in place (its servers apply one gradient at a time, so their key ranges share "
      "no step to re-form from); use --ps-mode bsp, or give --recover abort and relaunch with scripts/elastic.sh",
      ps_mode_name(mode));
}

std::string check_ps_flags(const TrainConfig& c, const FlagGiven& given) {
  const bool ps = c.sync.family == SyncFamily::ps;
  const bool ssp = ps_options(c).mode == PsMode::ssp;
  if (given("--ps-mode") && !ps)
    return fmt::format("--ps-mode: only with --sync ps (this run's --sync is {})", c.sync.name());
  if (given("--replicas") && !ps)
    return fmt::format("--replicas: only with --sync ps (this run's --sync is {})", c.sync.name());
  if (given("--staleness") && !(ps && ssp))
    return "--staleness: only with --sync ps --ps-mode ssp (it bounds how far a worker may run ahead of the slowest)";
  if (ps && ssp && !given("--staleness"))
    return "--ps-mode: ssp needs its bound: --staleness S, the steps a worker may run ahead of the slowest (S = 0 is "
           "bsp)";
  return {};
}

std::string check_ps_compression(const TrainConfig& c) {
  const CompressionChoice& choice = c.compression;
  if (choice.compressor->make_codec) return {};
  return fmt::format(
      "--compress {}: the parameter server (--sync ps) takes pushes it can decode key range by key range ({}); this "
      "compressor has no such part (PowerSGD's factors are sums that every worker needs back before its next "
      "product), so it needs an allreduce method ({})",
      choice.name(), codec_compressor_names(), allreduce_method_names(trains));
}

constexpr SpecModifier kPsModifiers[] = {
    {"mode=MODE", "--ps-mode"}, {"staleness=S", "--staleness"}, {"servers=K", "--servers"}, {"replicas=R", "--replicas"}};

std::string describe_ps(const TrainConfig& c) {
  const PsOptions& o = ps_options(c);
  std::string name = fmt::format("-{}", ps_mode_name(o.mode));
  if (o.mode == PsMode::ssp) name += std::to_string(o.staleness);
  if (c.servers > 1) name += fmt::format("-k{}", c.servers);
  // As the servers hold them: run_fingerprint names a run with one server, whose replicas (like its shard count) a
  // resume may change.
  if (const int r = std::min(o.replicas, c.servers); r > 1) name += fmt::format("-r{}", r);
  return name;
}

struct PsFlags final : FlagState {
  std::string mode;   // --ps-mode, a name of kPsModeNames
  PsOptions options;  // --staleness reads straight into it
};

std::unique_ptr<FlagState> add_ps_flags(CLI::App& app, TrainConfig& c) {
  auto raw = std::make_unique<PsFlags>();
  raw->options = ps_options(c);
  raw->mode = ps_mode_name(raw->options.mode);
  app.add_option("--ps-mode", raw->mode, "parameter server: bsp | asp | ssp")->capture_default_str();
  app.add_option("--staleness", raw->options.staleness, "ssp: how many steps a worker may run ahead")
      ->capture_default_str();
  app.add_option("--servers", c.servers, "parameter server shards (key ranges)")->capture_default_str();
  app.add_option("--replicas", raw->options.replicas, "parameter server: servers holding each key range live (bsp)")
      ->capture_default_str();
  return raw;
}

void take_ps_flags(const FlagState* state, TrainConfig& c) {
  const auto* raw = static_cast<const PsFlags*>(state);
  for (std::size_t i = 0; i < std::size(kPsModeNames); ++i)
    if (kPsModeNames[i] == raw->mode) {
      PsOptions options = raw->options;
      options.mode = static_cast<PsMode>(i);
      set_ps_options(c, options);
      return;
    }
  throw CLI::ValidationError("--ps-mode", fmt::format("unknown mode '{}' (choose bsp, asp or ssp)", raw->mode));
}

}  // namespace

extern const SyncFamilyInfo ps_sync_family = {
    .family = SyncFamily::ps,
    .name = "ps",
    .shape = {.servers = true, .pipelines = true},
    .flags = {.add = add_ps_flags, .take = take_ps_flags, .check_given = check_ps_flags, .spec_modifiers = kPsModifiers},
    .checks = {.validate = validate_ps,
               .check_compression = check_ps_compression,
               .in_place_refusal = ps_in_place_refusal},
    .report = {.describe = describe_ps,
               .dimensions = [](const TrainConfig& c, SyncDimensions& d) { d.mode = ps_mode_name(ps_options(c).mode); },
               .staleness_bound = [](const TrainConfig& c) -> int {
                 const PsOptions& o = ps_options(c);
                 return o.mode == PsMode::asp ? -1 : o.mode == PsMode::ssp ? o.staleness : 0;
               }},
    .build = {.make =
                  [](const TrainConfig& config, const SyncSetup& s) {
                    return make_ps_worker(s.world, ps_layout(config, s.world.size(), s.parameter_count), config,
                                          s.layers);
                  },
              .make_server = [](const TrainConfig& config, const ServerSetup& s) -> std::unique_ptr<ServerRole> {
                return std::make_unique<ParameterServer>(
                    s.world, s.servers, ps_layout(config, s.world.size(), s.params.size()), config,
                    std::vector<float>(s.params.begin(), s.params.end()), s.optimizer_state, s.layers, s.steps_done);
              },
              .send_worker_state = send_state_to_servers,
              .key_range_holders = [](const TrainConfig& c) { return std::min(ps_options(c).replicas, c.servers); }},
};

}  // namespace gradsync
