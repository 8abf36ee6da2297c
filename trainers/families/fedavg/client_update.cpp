#include "trainers/families/fedavg/client_update.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/rng.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/core/divergence.hpp"

namespace gradsync {

void client_epoch_order(std::span<const std::uint32_t> examples, std::span<std::uint32_t> out, std::uint64_t seed,
                        std::int64_t round, std::uint32_t client, int epoch) {
  std::ranges::copy(examples, out.begin());
  // A stream per (round, client, epoch), apart from the partition's and the sampling's (0x2000, 0x3000'0000 + round).
  const std::uint64_t stream = splitmix64(splitmix64(static_cast<std::uint64_t>(round) + 0x4000'0000'0000ULL) ^
                                          (static_cast<std::uint64_t>(client) << 20) ^ static_cast<std::uint64_t>(epoch));
  Rng rng(seed, stream);
  for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[rng.below(i)]);
}

ClientTrainer::ClientTrainer(const Model& model, const Dataset& train, const FederatedOptions& fed, std::size_t batch,
                             float lr, std::uint64_t seed, std::size_t largest_client)
    : model_(model), train_(train), fed_(fed), batch_size_(fed.full_batch ? largest_client : batch), lr_(lr), seed_(seed),
      piece_(std::max<std::size_t>(1, std::min(batch_size_, kEvaluationBatch))), ws_(model, piece_),
      batch_(piece_, train.features), order_(largest_client), grads_(model.parameter_count()),
      piece_grads_(batch_size_ > piece_ ? model.parameter_count() : 0) {}

float ClientTrainer::gradient(std::span<const float> local, std::span<const std::uint32_t> examples) {
  if (examples.size() <= piece_) {
    gather_batch(train_, examples, batch_, model_.reads_float_rows(examples.size()));
    return model_.loss_and_gradient(local, batch_, grads_, ws_);
  }
  // mean over all = sum over pieces of (piece size / all) * the piece's mean
  std::ranges::fill(grads_, 0.0f);
  double loss = 0;
  const double n = static_cast<double>(examples.size());
  for (std::size_t at = 0; at < examples.size(); at += piece_) {
    const std::span<const std::uint32_t> part = examples.subspan(at, std::min(piece_, examples.size() - at));
    gather_batch(train_, part, batch_, model_.reads_float_rows(part.size()));
    const double w = static_cast<double>(part.size()) / n;
    loss += w * model_.loss_and_gradient(local, batch_, piece_grads_, ws_);
    const auto wf = static_cast<float>(w);
    for (std::size_t i = 0; i < grads_.size(); ++i) grads_[i] += wf * piece_grads_[i];
  }
  return static_cast<float>(loss);
}

// Plain SGD; FedProx adds mu * (w - w_global) to the gradient.
void ClientTrainer::step(std::span<const float> global, std::span<float> local) {
  const float lr = lr_, mu = fed_.prox_mu;
  if (mu == 0.0f) {
    for (std::size_t i = 0; i < local.size(); ++i) local[i] -= lr * grads_[i];
  } else {
    for (std::size_t i = 0; i < local.size(); ++i) local[i] -= lr * (grads_[i] + mu * (local[i] - global[i]));
  }
}

ClientWork ClientTrainer::train(std::span<const float> global, std::span<float> local,
                                std::span<const std::uint32_t> examples, std::uint32_t client, std::int64_t round) {
  std::ranges::copy(global, local.begin());
  const std::size_t n = examples.size(), b = fed_.full_batch ? n : batch_size_;
  const long per_epoch = static_cast<long>((n + b - 1) / b);
  const long steps = fed_.local_steps > 0 ? fed_.local_steps : per_epoch * fed_.local_epochs;
  const std::span<std::uint32_t> order = std::span(order_).first(n);
  ClientWork work;
  for (long s = 0; s < steps; ++s) {
    const long in_epoch = s % per_epoch;
    if (in_epoch == 0) client_epoch_order(examples, order, seed_, round, client, static_cast<int>(s / per_epoch));
    const std::size_t first = static_cast<std::size_t>(in_epoch) * b;
    const std::span<const std::uint32_t> part = order.subspan(first, std::min(b, n - first));
    const float loss = gradient(local, part);
    if (!std::isfinite(loss) || !all_finite(grads_))
      throw DivergenceError(fmt::format("training diverged: NaN/Inf {} in client {}'s local step {} of round {}",
                                        std::isfinite(loss) ? "in the gradient" : "loss", client, s, round + 1));
    step(global, local);
    work.loss_sum += loss;
    work.examples += static_cast<double>(part.size());
  }
  work.steps = steps;
  return work;
}

}  // namespace gradsync
