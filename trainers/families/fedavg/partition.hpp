#pragma once
// How federated averaging deals the training set to its clients (McMahan et al. 2017, section 3; Hsu et al. 2019 for
// the Dirichlet split). A client is a list of example indices; every rank derives the same lists from the seed, so no
// message carries them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainers/config/partition_spec.hpp"

namespace gradsync {

// Every client's examples, one contiguous run of `examples` each: client k holds examples[starts[k] .. starts[k+1]).
struct ClientPartitions {
  std::vector<std::uint32_t> examples;  // every training example exactly once, grouped by client
  std::vector<std::size_t> starts;      // clients + 1 offsets
  std::size_t clients() const { return starts.size() - 1; }
  std::size_t size(std::size_t k) const { return starts[k + 1] - starts[k]; }
  std::span<const std::uint32_t> client(std::size_t k) const {
    return std::span<const std::uint32_t>(examples).subspan(starts[k], size(k));
  }
};

// Deals examples 0..labels.size()-1 (labels[i] < classes) to `clients` clients as `spec` says, from `seed` alone:
//   iid: a seeded shuffle cut into `clients` runs whose sizes differ by at most one;
//   shards: the examples sorted by label (stably), cut into clients * S shards whose sizes differ by at most one, and S
//     of them, drawn at random, given to each client (S = 2: most clients see two digits);
//   dirichlet: for each class, proportions over the clients drawn from Dir(alpha) cut that class's shuffled examples;
//     a client may get none.
// Every example is dealt exactly once. Throws std::invalid_argument if clients == 0, labels is empty, or (shards) there
// are fewer examples than shards. The same result on every rank, compiler and library (model/rng.hpp).
ClientPartitions partition_clients(std::span<const std::uint8_t> labels, int classes, std::size_t clients,
                                   const PartitionSpec& spec, std::uint64_t seed);

}  // namespace gradsync
