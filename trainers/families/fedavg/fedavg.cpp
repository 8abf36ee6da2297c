// --sync fedavg: federated averaging (McMahan et al. 2017). K clients, each a partition of the training set
// (partition.hpp), are dealt over the workers; each round samples m of them (client_sampling.hpp), each trains from the
// global model on its own examples (client_update.hpp), and the global model becomes the average of their models
// weighted by their example counts. The workers sum the weighted updates with an allreduce method (--aggregate), so
// the global model is the same bits on every worker and is what the run evaluates and checkpoints.
#include <fmt/format.h>

#include <algorithm>

#include "collectives/methods.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/sync_registry.hpp"
#include "trainers/families/fedavg/client_sampling.hpp"
#include "trainers/families/fedavg/client_update.hpp"
#include "trainers/families/fedavg/fedavg_flags.hpp"
#include "trainers/families/fedavg/partition.hpp"

namespace gradsync {
namespace {

const AllreduceMethod& aggregation_method(const FederatedOptions& fed) {
  return fed.aggregate ? *fed.aggregate : *find_allreduce_method("ring");
}

// The parameter server aggregates as a contributing server: rank 0 hosts clients too, sums every worker's update in
// rank order and sends the sum back (collectives/ps_allreduce.hpp).
AllreduceOptions aggregation_options(const TrainConfig& config) {
  AllreduceOptions o = allreduce_options(config);
  if (aggregation_method(config.fed).takes(kServerContributesOption)) o.own.set(kServerContributesOption, 1);
  return o;
}

std::size_t largest(const ClientPartitions& p) {
  std::size_t most = 0;
  for (std::size_t k = 0; k < p.clients(); ++k) most = std::max(most, p.size(k));
  return most;
}

class FederatedAveraging final : public RoundTrainer {
 public:
  FederatedAveraging(const TrainConfig& config, const SyncSetup& s)
      : config_(config), workers_(s.workers),
        partitions_(
            partition_clients(s.train->labels, s.train->classes, config.fed.clients, config.fed.partition, config.seed)),
        per_round_(clients_per_round(config.fed.clients, config.fed.client_fraction)),
        client_(*s.model, *s.train, config.fed, config.batch, config.sgd.lr, config.seed, largest(partitions_)),
        allreduce_(aggregation_method(config.fed).make(s.workers, aggregation_options(config))),
        local_(s.parameter_count), update_(s.parameter_count),
        outer_(config.outer_lr != 1.0f || config.outer_momentum != 0.0f),
        velocity_(config.outer_momentum != 0.0f ? s.parameter_count : 0) {}

  std::size_t state_size() const override { return velocity_.size(); }
  void save_state(std::span<float> out) override { std::ranges::copy(velocity_, out.begin()); }
  void load_state(std::span<const float> saved, int, int) override {
    if (saved.size() != velocity_.size())
      throw std::invalid_argument(
          fmt::format("fedavg: the checkpoint's server momentum has {} values, this run "
                      "needs {}",
                      saved.size(), velocity_.size()));
    std::ranges::copy(saved, velocity_.begin());
  }

  EpochWork run_round(std::int64_t round, std::span<float> params) override {
    EpochWork work;
    const double t0 = now_s();
    const std::vector<std::uint32_t> sampled = sample_clients(config_.fed.clients, per_round_, config_.seed, round);
    double total = 0;  // the round's examples over every sampled client: the weights' denominator, known everywhere
    for (std::uint32_t k : sampled) total += static_cast<double>(partitions_.size(k));
    std::ranges::fill(update_, 0.0f);
    for (std::size_t j : my_clients(sampled.size(), workers_.rank(), workers_.size())) {
      const std::uint32_t k = sampled[j];
      if (partitions_.size(k) == 0) continue;  // a Dirichlet client may hold nothing: weight 0
      const ClientWork done = client_.train(params, local_, partitions_.client(k), k, round);
      work.loss_sum += done.loss_sum;
      work.steps += static_cast<double>(done.steps);
      work.examples += done.examples;
      // update += (n_k / n) * (w_k - w): summed over the clients, w + update is their weighted mean.
      const auto weight = static_cast<float>(static_cast<double>(partitions_.size(k)) / total);
      for (std::size_t i = 0; i < update_.size(); ++i) update_[i] += weight * (local_[i] - params[i]);
    }
    const double t1 = now_s();
    allreduce_->run(std::span<float>(update_));
    server_step(params);
    work.compute_s = t1 - t0;
    work.sync_s = now_s() - t1;
    return work;
  }

 private:
  // Without an outer optimizer the global model becomes the weighted mean. With one (FedAvgM-style server momentum;
  // the same Nesterov step as local SGD's outer optimizer): the mean update is an outer gradient's negative.
  void server_step(std::span<float> params) {
    if (!outer_) {
      for (std::size_t i = 0; i < params.size(); ++i) params[i] += update_[i];
      return;
    }
    const float mu = config_.outer_momentum, lr = config_.outer_lr;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const float delta = -update_[i];
      float step = delta;
      if (mu != 0.0f) {
        velocity_[i] = mu * velocity_[i] + delta;
        step = delta + mu * velocity_[i];
      }
      params[i] -= lr * step;
    }
  }

  const TrainConfig& config_;
  const Comm& workers_;
  ClientPartitions partitions_;
  std::size_t per_round_;
  ClientTrainer client_;
  std::unique_ptr<Allreduce> allreduce_;
  std::vector<float> local_, update_;  // one client's model; this worker's clients' weighted updates, then all of them
  bool outer_;
  std::vector<float> velocity_;  // the server momentum (with --outer-momentum)
};

std::string validate_fedavg(const TrainConfig& c, int ranks) {
  const FederatedOptions& f = c.fed;
  if (f.clients == 0) return "--clients: must be >= 1";
  if (!(f.client_fraction >= 0 && f.client_fraction <= 1))
    return fmt::format("--client-fraction: must be in [0, 1], got {}", f.client_fraction);
  if (f.local_epochs < 1) return fmt::format("--local-epochs: must be >= 1, got {}", f.local_epochs);
  if (f.local_steps < 0) return fmt::format("--local-steps: must be >= 1, got {}", f.local_steps);
  if (f.prox_mu < 0) return fmt::format("--prox-mu: must be >= 0, got {}", f.prox_mu);
  const AllreduceMethod& m = aggregation_method(f);
  if (!m.exact)
    return fmt::format("--aggregate {}: the clients' updates need an exact sum ({})", m.name,
                       allreduce_method_names([](const AllreduceMethod& a) { return a.exact; }));
  if (m.servers == ServerRanks::some) return fmt::format("--aggregate {}: use ps (one server)", m.name);
  if (m.servers == ServerRanks::one && c.worker_count(ranks) < 2)
    return fmt::format("--aggregate {}: the parameter server needs at least 2 ranks", m.name);
  if (c.sgd.momentum != 0.0f)
    return "--momentum: fedavg's clients run plain SGD from the global model each round; server momentum is "
           "--outer-momentum";
  if (c.sgd.weight_decay != 0.0f) return "--weight-decay: not with --sync fedavg (its clients run plain SGD)";
  if (c.compression.enabled())
    return "--compress: not with --sync fedavg yet: the compressors keep each worker's residual across steps, while a "
           "round's update on a worker comes from the clients it drew, a different set every round";
  if (c.average_every > 0) return "--average-every: fedavg averages every round by construction";
  if (c.global_batch > 0) return "--global-batch: fedavg's batch is each client's own (--batch B or --batch all)";
  if (c.iterations_per_epoch != TrainConfig::kFullPass)
    return "--iterations-per-epoch: fedavg's work a round is --local-epochs or --local-steps";
  return {};
}

// Its flags are refused with another --sync; with it, --epochs (it counts rounds) and both kinds of local work.
std::string check_fedavg_flags(const TrainConfig& c, const FlagGiven& given) {
  const bool fedavg = c.sync.family == SyncFamily::fedavg;
  for (const char* flag : {"--clients", "--client-fraction", "--local-epochs", "--local-steps", "--rounds", "--partition",
                           "--aggregate", "--prox-mu"})
    if (given(flag) && !fedavg)
      return fmt::format("{}: only with --sync fedavg (this run's --sync is {})", flag, c.sync.name());
  if (c.fed.full_batch && !fedavg) return "--batch: 'all' (a client's whole partition a step) only with --sync fedavg";
  if (!fedavg) return {};
  if (given("--epochs")) return "--epochs: a federated run counts rounds: give --rounds N";
  if (given("--local-steps") && given("--local-epochs"))
    return "--local-steps: give --local-epochs or --local-steps, not both";
  return {};
}

// A client's batch is its own (no share of the training set to fit); the partition needs enough examples.
std::string validate_fedavg_data(const TrainConfig& c, int, std::size_t train_rows) {
  const FederatedOptions& f = c.fed;
  const std::size_t needed = f.partition.kind == PartitionKind::shards ? f.clients * f.partition.shards : f.clients;
  if (needed > train_rows)
    return fmt::format("--clients {} with --partition {}: needs {} examples, the training set has {}", f.clients,
                       f.partition.name(), needed, train_rows);
  return {};
}

// The clients, their rounds and the server's step; --rounds and --batch are the run's length and batch, as
// --epochs and --batch are for the other families.
constexpr SpecModifier kFedavgModifiers[] = {{"clients=K", "--clients"},
                                             {"client-fraction=C", "--client-fraction"},
                                             {"local-epochs=E", "--local-epochs"},
                                             {"local-steps=S", "--local-steps"},
                                             {"partition=P", "--partition"},
                                             {"aggregate=METHOD", "--aggregate"},
                                             {"prox-mu=MU", "--prox-mu"},
                                             {"outer-lr=LR", "--outer-lr"},
                                             {"outer-momentum=MU", "--outer-momentum"}};

std::string describe_fedavg(const TrainConfig& c) {
  const FederatedOptions& fed = c.fed;
  std::string name =
      fmt::format("-K{}-C{}-{}{}-B{}-{}", fed.clients, fed.client_fraction, fed.local_steps > 0 ? "S" : "E",
                  fed.local_steps > 0 ? fed.local_steps : fed.local_epochs,
                  fed.full_batch ? std::string("all") : std::to_string(c.batch), fed.partition.name());
  if (fed.aggregate && fed.aggregate->name != "ring") name += fmt::format("-{}", fed.aggregate->name);
  if (fed.prox_mu != 0.0f) name += fmt::format("-prox{}", fed.prox_mu);
  return name;
}

// "100 clients (shards:2), 10 a round: 1 local epoch(s) of batch 10 from the global model, summed by ring".
std::string describe_clients(const TrainConfig& c) {
  const FederatedOptions& f = c.fed;
  const std::string work = f.local_steps > 0 ? fmt::format("{} local step(s)", f.local_steps)
                                             : fmt::format("{} local epoch(s)", f.local_epochs);
  return fmt::format("{} clients ({}), {} a round: {} of batch {} from the global model{}, summed by {}", f.clients,
                     f.partition.name(), clients_per_round(f.clients, f.client_fraction), work,
                     f.full_batch ? std::string("all") : std::to_string(c.batch),
                     f.prox_mu != 0.0f ? fmt::format(" (proximal mu {})", f.prox_mu) : std::string{},
                     f.aggregate ? f.aggregate->name : "ring");
}

}  // namespace

extern const SyncFamilyInfo fedavg_sync_family = {
    .family = SyncFamily::fedavg,
    .name = "fedavg",
    .shape = {.rounds = true},
    .flags = {.add = add_fedavg_flags,
              .check_given = check_fedavg_flags,
              .take_checked = take_fedavg_flags,
              .spec_modifiers = kFedavgModifiers},
    .checks = {.validate = validate_fedavg, .validate_against_data = validate_fedavg_data},
    .report = {.describe = describe_fedavg,
               .dimensions =
                   [](const TrainConfig& c, SyncDimensions& d) {
                     d.allreduce = c.fed.aggregate ? c.fed.aggregate->name : "ring";
                     d.mode = "rounds";
                   },
               .setup_line = [](const TrainConfig& c, int) { return describe_clients(c); },
               // Not when --aggregate is a library collective, whose bytes gradsync's meter cannot see.
               .wire_bytes_counted = [](const TrainConfig& c) { return !(c.fed.aggregate && c.fed.aggregate->library); }},
    .build = {.state_size = [](const TrainConfig& c, std::size_t parameter_count, int) -> std::size_t {
                return c.outer_momentum != 0.0f ? parameter_count : 0;
              },
              .make_rounds = [](const TrainConfig& c, const SyncSetup& s) -> std::unique_ptr<RoundTrainer> {
                if (!s.train || !s.model)
                  throw std::invalid_argument("fedavg: the synchronizer needs the training set and model");
                return std::make_unique<FederatedAveraging>(c, s);
              }},
};

}  // namespace gradsync
