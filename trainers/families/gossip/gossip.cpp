// --sync gossip: decentralized SGD. Every worker keeps its own model and mixes it with its neighbours' in the graph
// --topology names (collectives/topology.hpp); no server and no global collective. Synchronous (D-PSGD, Lian et al.
// 2017): x_i <- sum_j W_ij x_j - lr * g_i(x_i), the exchange of the step's starting parameters overlapping the
// backward pass. With --async (AD-PSGD): each even rank averages with one odd neighbour a step and nobody waits
// for anyone else (collectives/pair_gossip.hpp). With --compress: CHOCO-SGD (choco_gossip.cpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "collectives/gossip_exchange.hpp"
#include "collectives/pair_gossip.hpp"
#include "trainers/checkpoint/replicas.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/families/gossip/choco_gossip.hpp"
#include "trainers/families/gossip/gossip_options.hpp"

namespace gradsync {
namespace {

// What the two gossip synchronizers share: replicas of their own, checkpointed as Replicas says.
class ReplicaSync : public Synchronizer {
 public:
  ReplicaSync(const Comm& workers, Sgd& sgd, std::size_t count) : replicas_(workers, sgd, count) {}
  bool keeps_replicas() const final { return true; }
  void start_from(std::span<float> params) final { replicas_.start_from(params); }
  std::size_t state_size() const final { return replicas_.state_size(); }
  void save_state(std::span<float> out) final { replicas_.save(out); }
  void load_state(std::span<const float> saved, int saved_workers, int index) final {
    replicas_.load(saved, saved_workers, index);
  }

 private:
  Replicas replicas_;
};

class GossipSgd final : public ReplicaSync, public PassObserver {
 public:
  GossipSgd(const Comm& workers, Topology topology, Sgd& sgd, std::size_t count, std::int64_t steps_done)
      : ReplicaSync(workers, sgd, count), exchange_(workers, topology, count), sgd_(sgd), step_(steps_done) {}

  // The exchange of the parameters this step starts from goes out before the pass, and moves on between its kernels.
  PassObserver* observer(std::span<const float> params, std::span<float>) override {
    exchange_.start(step_, params);
    started_ = true;
    return this;
  }
  void gradient_ready(std::size_t, std::size_t) override {}
  void between_kernels() override { exchange_.test(); }

  void step(std::span<float> params, std::span<float> grads) override {
    if (!started_) exchange_.start(step_, params);  // a caller that computed the gradient without observer()
    exchange_.wait();
    exchange_.mix(params, params);
    sgd_.step(params, grads);
    started_ = false;
    ++step_;
  }

 private:
  GossipExchange exchange_;
  Sgd& sgd_;
  std::int64_t step_;
  bool started_ = false;
};

// A resumed run continues from the replicas as they were at the checkpoint: nothing was in flight then (drain()
// answered every request of the steps before it), so they are a consistent cut, though which pairs averaged when
// before it depended on timing.
class AsyncGossipSgd final : public ReplicaSync {
 public:
  AsyncGossipSgd(const Comm& workers, Topology topology, Sgd& sgd, std::size_t count, std::int64_t steps_done)
      : ReplicaSync(workers, sgd, count), pairs_(workers, topology, count, steps_done), sgd_(sgd), step_(steps_done) {}

  // The gradient was computed at the model before this average, as in AD-PSGD.
  void step(std::span<float> params, std::span<float> grads) override {
    if (pairs_.active())
      pairs_.average_with_peer(step_, params);
    else
      pairs_.serve(params);
    sgd_.step(params, grads);
    ++step_;
  }
  // Nothing crosses a stretch's end: a passive rank answers every request of the steps taken so far.
  void drain(std::span<float> params) override {
    if (!pairs_.active()) pairs_.serve_until(step_, params);
  }

 private:
  PairGossip pairs_;
  Sgd& sgd_;
  std::int64_t step_;
};

std::string validate_gossip(const TrainConfig& c, int ranks) {
  return c.compression.enabled() ? check_choco_run(c, ranks) : std::string();
}

std::string check_gossip_flags(const TrainConfig& c, const FlagGiven& given) {
  for (const char* flag : {"--topology", "--async", "--gossip-gamma"})
    if (given(flag) && c.sync.family != SyncFamily::gossip)
      return fmt::format("{}: only with --sync gossip (this run's --sync is {})", flag, c.sync.name());
  if (given("--gossip-gamma") && !c.compression.enabled())
    return "--gossip-gamma: only with --compress (CHOCO-SGD's consensus step; uncompressed gossip mixes the models "
           "themselves)";
  return {};
}

constexpr SpecModifier kGossipModifiers[] = {
    {"topology=GRAPH", "--topology"}, {"async", "--async"}, {"gamma=G", "--gossip-gamma"}};

std::string describe_gossip(const TrainConfig& c) {
  const GossipOptions& g = gossip_options(c);
  std::string name = fmt::format("-{}{}", topology_info(g.topology).name, g.async ? "-async" : "");
  if (c.compression.enabled() && g.gamma != GossipOptions::kDefaultGamma) name += fmt::format("-g{}", g.gamma);
  return name;
}

// The graph's line before training: "topology exp on 16 workers (...): 4 peer(s) a step, spectral gap 0.4286".
std::string describe_graph(const TrainConfig& c, int ranks) {
  const int workers = c.worker_count(ranks);
  const GossipOptions& g = gossip_options(c);
  const TopologyInfo& t = topology_info(g.topology);
  double peers = 0;
  const int period = topology_period(g.topology, workers);
  for (int s = 0; s < period; ++s) peers += static_cast<double>(neighbourhood(g.topology, workers, 0, s).peers.size());
  const std::string exchange = g.async ? "asynchronous: each even rank averages with one odd neighbour a step"
                                       : fmt::format("{:.3g} peer(s) a step", peers / period);
  return fmt::format("topology {} on {} workers ({}): {}, spectral gap {:.4f}", t.name, workers, t.summary, exchange,
                     spectral_gap(g.topology, workers));
}

struct GossipFlags final : FlagState {
  std::string topology = "ring";  // --topology, a name of collectives/topology.hpp's list
  GossipOptions options;          // --async and --gossip-gamma read straight into it
};

std::unique_ptr<FlagState> add_gossip_flags(CLI::App& app, TrainConfig& c) {
  auto raw = std::make_unique<GossipFlags>();
  raw->options = gossip_options(c);
  app.add_option("--topology", raw->topology,
                 fmt::format("--sync gossip: the graph ranks average over: {}", topology_names(" | ")))
      ->capture_default_str();
  app.add_flag("--async", raw->options.async,
               "--sync gossip: asynchronous (AD-PSGD): even ranks average with one odd neighbour a step, no barrier");
  app.add_option("--gossip-gamma", raw->options.gamma,
                 "--sync gossip --compress: CHOCO-SGD's consensus step size, in (0, 1]")
      ->capture_default_str();
  return raw;
}

void take_gossip_flags(const FlagState* state, TrainConfig& c) {
  const auto* raw = static_cast<const GossipFlags*>(state);
  const TopologyInfo* topology = find_topology(raw->topology);
  if (!topology)
    throw CLI::ValidationError("--topology",
                               fmt::format("unknown topology '{}' (choose {})", raw->topology, topology_names()));
  GossipOptions options = raw->options;
  options.topology = topology->id;
  set_gossip_options(c, options);
}

std::unique_ptr<Synchronizer> make_gossip(const TrainConfig& c, const SyncSetup& s) {
  if (c.compression.enabled()) return make_choco_gossip(c, s);
  const GossipOptions& g = gossip_options(c);
  if (g.async) return std::make_unique<AsyncGossipSgd>(s.workers, g.topology, s.sgd, s.parameter_count, s.steps_done);
  return std::make_unique<GossipSgd>(s.workers, g.topology, s.sgd, s.parameter_count, s.steps_done);
}

}  // namespace

extern const SyncFamilyInfo gossip_sync_family = {
    .family = SyncFamily::gossip,
    .name = "gossip",
    .shape = {.compresses_itself = true},
    .flags = {.add = add_gossip_flags,
              .take = take_gossip_flags,
              .check_given = check_gossip_flags,
              .spec_modifiers = kGossipModifiers},
    .checks = {.validate = validate_gossip, .check_compression = check_choco_compression},
    .report = {.describe = describe_gossip,
               .dimensions = [](const TrainConfig& c,
                                SyncDimensions& d) { d.mode = gossip_options(c).async ? "async" : "sync"; },
               .setup_line = describe_graph,
               .spectral_gap = [](const TrainConfig& c,
                                  int workers) { return spectral_gap(gossip_options(c).topology, workers); }},
    .build = {.state_size =
                  [](const TrainConfig& c, std::size_t parameter_count, int workers) {
                    const std::size_t momentum = c.sgd.momentum != 0.0f ? parameter_count : 0;
                    return static_cast<std::size_t>(workers) * (parameter_count + momentum) +
                           (c.compression.enabled() ? choco_state_size(parameter_count, workers) : 0);
                  },
              .make = make_gossip},
};

}  // namespace gradsync
