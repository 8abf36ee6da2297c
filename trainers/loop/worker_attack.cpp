#include "trainers/loop/worker_attack.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "attacks/gradient_attacks.hpp"

namespace gradsync {

namespace {

// The backdoor's trigger for square images of `features` pixels (MNIST's 28 x 28), or nullopt.
std::optional<Trigger> square_trigger(std::size_t features) {
  const auto side = static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(features))));
  Trigger t;
  if (side * side != features || side < t.size) return std::nullopt;
  t.width = t.height = side;
  return t;
}

}  // namespace

std::unique_ptr<WorkerAttack> WorkerAttack::make(const TrainConfig& config, const Comm& workers, const Dataset& train) {
  const std::size_t features = train.features;
  const RobustnessOptions& r = config.robust;
  if (!r.attack || r.byzantine == 0) return nullptr;
  if (r.attack->kind == AttackKind::backdoor && !square_trigger(features))
    throw std::invalid_argument(
        fmt::format("--attack {}: the trigger needs square images of at least 4 x 4 pixels; "
                    "these examples have {} features",
                    r.attack->text, features));
  const int index = workers.rank(), n = workers.size();
  const bool bad = r.malicious(index, n);
  std::optional<Comm> colluders;
  if (attack_colludes(r.attack->kind)) colluders.emplace(workers.split(bad ? 0 : MPI_UNDEFINED, index));
  if (!bad) return nullptr;
  return std::unique_ptr<WorkerAttack>(new WorkerAttack(config, index, n, train, std::move(colluders)));
}

WorkerAttack::WorkerAttack(const TrainConfig& config, int index, int workers, const Dataset& train,
                           std::optional<Comm> colluders)
    : spec_(*config.robust.attack), seed_(config.seed), index_(index), workers_(workers), classes_(train.classes) {
  if (colluders) colluders_.emplace(std::move(*colluders));
  if (spec_.kind == AttackKind::alie)
    z_ = spec_.scale != 0 ? spec_.scale : alie_z(workers, config.robust.byzantine);  // validate() checked n and f
  if (spec_.kind == AttackKind::backdoor) {
    trigger_ = *square_trigger(train.features);
    pixels_.resize(config.batch * train.features);
  }
}

void WorkerAttack::on_batch(Batch& batch, std::int64_t step) {
  const std::span<std::uint8_t> labels(batch.labels.data(), batch.size);
  if (spec_.kind == AttackKind::label_flip) flip_labels(labels, classes_);
  if (spec_.kind != AttackKind::backdoor) return;
  const std::size_t f = batch.features;
  for (std::size_t j = 0; j < batch.size; ++j) std::memcpy(pixels_.data() + j * f, batch.row_bytes[j], f);
  const auto stream =
      static_cast<std::uint64_t>(step) * static_cast<std::uint64_t>(workers_) + static_cast<std::uint64_t>(index_);
  poison_backdoor(std::span(pixels_).first(batch.size * f), labels, spec_.scale, spec_.target_class, seed_, stream,
                  trigger_);
  for (std::size_t j = 0; j < batch.size; ++j) {
    batch.row_bytes[j] = pixels_.data() + j * f;
    if (batch.has_rows) widen_row(batch.row_bytes[j], f, batch.rows.data() + j * f);
  }
}

void WorkerAttack::on_gradient(std::span<float> grads, std::int64_t step) {
  const auto stream =
      static_cast<std::uint64_t>(step) * static_cast<std::uint64_t>(workers_) + static_cast<std::uint64_t>(index_);
  switch (spec_.kind) {
    case AttackKind::sign_flip: sign_flip(grads, static_cast<float>(spec_.scale), grads); break;
    case AttackKind::gaussian: gaussian_noise(static_cast<float>(spec_.scale), seed_, stream, grads); break;
    case AttackKind::alie:
      colluders_->run(grads);
      alie(colluders_->mean(), colluders_->std(), z_, grads);
      break;
    case AttackKind::ipm:
      colluders_->run(grads);
      ipm(colluders_->mean(), static_cast<float>(spec_.scale), grads);
      break;
    case AttackKind::label_flip:
    case AttackKind::backdoor: break;  // data attacks: on_batch
  }
}

}  // namespace gradsync
