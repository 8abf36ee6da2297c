#pragma once
// One federated client's local training (FedAvg's ClientUpdate, McMahan et al. 2017, Algorithm 1): from the round's
// global model, plain SGD over its own examples for E epochs (or a number of steps) with batch B, optionally with
// FedProx's proximal term. Buffers are allocated once and reused for every client of every round.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/dataset.hpp"
#include "model/model.hpp"
#include "trainers/config/federated_options.hpp"

namespace gradsync {

// The order in which client `client` visits its `examples` in local epoch `epoch` of round `round`: a shuffle of
// them on a stream of `seed` of its own, written to `out` (examples.size() elements). The same on every rank.
void client_epoch_order(std::span<const std::uint32_t> examples, std::span<std::uint32_t> out, std::uint64_t seed,
                        std::int64_t round, std::uint32_t client, int epoch);

struct ClientWork {
  double loss_sum = 0;  // sum of the local steps' mean losses
  long steps = 0;
  double examples = 0;  // examples the steps took, counted with repeats
};

class ClientTrainer {
 public:
  // `batch` is B (ignored with fed.full_batch); `largest_client` bounds every client's example count. `model`,
  // `train` and `fed` must outlive this object. Full-batch steps are computed in pieces of at most kEvaluationBatch
  // examples, weighted by their sizes, so a large client needs no workspace of its size.
  ClientTrainer(const Model& model, const Dataset& train, const FederatedOptions& fed, std::size_t batch, float lr,
                std::uint64_t seed, std::size_t largest_client);

  // Trains client `client` (its `examples`, not empty) of round `round` from `global`, leaving its model in `local`
  // (both parameter_count floats, the caller's). Throws DivergenceError (trainers/core/divergence.hpp) on a NaN or Inf
  // loss or gradient, naming the client and round.
  ClientWork train(std::span<const float> global, std::span<float> local, std::span<const std::uint32_t> examples,
                   std::uint32_t client, std::int64_t round);

 private:
  // The mean gradient over `examples` into grads_ (in pieces for a large full batch); returns the mean loss.
  float gradient(std::span<const float> local, std::span<const std::uint32_t> examples);
  void step(std::span<const float> global, std::span<float> local);

  const Model& model_;
  const Dataset& train_;
  const FederatedOptions& fed_;
  std::size_t batch_size_;
  float lr_;
  std::uint64_t seed_;
  std::size_t piece_;  // largest batch one pass takes
  Workspace ws_;
  Batch batch_;
  std::vector<std::uint32_t> order_;
  std::vector<float> grads_, piece_grads_;
};

}  // namespace gradsync
