#pragma once
// What a federated-averaging run (--sync fedavg, trainers/families/fedavg/) is made of beyond TrainConfig's common
// fields: how many clients, how each round samples and trains them, how the examples are dealt.
#include <cstddef>

#include "collectives/allreduce_method.hpp"
#include "trainers/config/partition_spec.hpp"

namespace gradsync {

struct FederatedOptions {
  std::size_t clients = 100;     // K logical clients, trained by the workers in turn
  double client_fraction = 0.1;  // C: each round samples max(floor(C * K), 1) of them
  int local_epochs = 1;          // E: passes over its own examples a sampled client makes each round
  long local_steps = 0;          // > 0: that many local steps a round instead, cycling through its examples
  bool full_batch = false;       // --batch all: a local step takes all of the client's examples (FedSGD with E = 1)
  PartitionSpec partition;       // how the training set is dealt to the clients
  const AllreduceMethod* aggregate = nullptr;  // sums the clients' updates; nullptr: ring
  float prox_mu = 0;                           // FedProx: mu/2 * ||w - w_global||^2 added to every client's loss
};

}  // namespace gradsync
