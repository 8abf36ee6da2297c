#include "trainers/families/fedavg/fedavg_flags.hpp"

#include <fmt/format.h>

#include "collectives/methods.hpp"

namespace gradsync {

namespace {

// What CLI11 reads as text or a wider type before it becomes FederatedOptions.
struct FederatedFlags final : FlagState {
  std::string partition = "iid", aggregate = "ring";
  long clients = 100, local_steps = 0;
  int rounds = 0;
};

}  // namespace

std::unique_ptr<FlagState> add_fedavg_flags(CLI::App& app, TrainConfig& c) {
  auto state = std::make_unique<FederatedFlags>();
  FederatedFlags& raw = *state;
  raw.clients = static_cast<long>(c.fed.clients);
  raw.rounds = c.epochs;  // a federated run's rounds are its epochs: --help shows their default
  app.add_option("--clients", raw.clients, "--sync fedavg: logical clients K, dealt over the ranks")
      ->capture_default_str();
  app.add_option("--client-fraction", c.fed.client_fraction,
                 "--sync fedavg: C, each round trains max(floor(C*K), 1) clients drawn from the seed")
      ->capture_default_str();
  app.add_option("--local-epochs", c.fed.local_epochs, "--sync fedavg: E, passes over its own examples a client makes")
      ->capture_default_str();
  app.add_option("--local-steps", raw.local_steps, "--sync fedavg: this many local steps a round instead of E epochs");
  app.add_option("--rounds", raw.rounds, "--sync fedavg: communication rounds (an epoch line and CSV row each)")
      ->capture_default_str();
  app.add_option("--partition", raw.partition,
                 "--sync fedavg: how the examples are dealt: iid | shards:S (label-sorted shards, S a client) | "
                 "dirichlet:ALPHA")
      ->capture_default_str();
  app.add_option("--aggregate", raw.aggregate,
                 "--sync fedavg: the allreduce method that sums the clients' updates (ps: rank 0 serves)")
      ->capture_default_str();
  app.add_option("--prox-mu", c.fed.prox_mu, "--sync fedavg: FedProx's proximal weight mu (0: FedAvg)");
  return state;
}

void take_fedavg_flags(const CLI::App& app, const FlagState* state, TrainConfig& c) {
  const FederatedFlags& raw = *static_cast<const FederatedFlags*>(state);
  if (app.count("--rounds") > 0) {
    if (raw.rounds < 1) throw CLI::ValidationError("--rounds", fmt::format("must be >= 1, got {}", raw.rounds));
    c.epochs = raw.rounds;
  }
  if (raw.clients < 1) throw CLI::ValidationError("--clients", fmt::format("must be >= 1, got {}", raw.clients));
  if (app.count("--local-steps") > 0 && raw.local_steps < 1)
    throw CLI::ValidationError("--local-steps", fmt::format("must be >= 1, got {}", raw.local_steps));
  std::string problem;
  const std::optional<PartitionSpec> partition = parse_partition(raw.partition, problem);
  if (!partition) throw CLI::ValidationError("--partition", problem);
  const AllreduceMethod* aggregate = find_allreduce_method(raw.aggregate);
  if (!aggregate)
    throw CLI::ValidationError("--aggregate", fmt::format("unknown method '{}' (choose {})", raw.aggregate,
                                                          allreduce_method_names([](const AllreduceMethod& m) {
                                                            return m.exact && m.servers != ServerRanks::some;
                                                          })));
  c.fed.clients = static_cast<std::size_t>(raw.clients);
  c.fed.local_steps = raw.local_steps;
  c.fed.partition = *partition;
  c.fed.aggregate = aggregate;
}

}  // namespace gradsync
