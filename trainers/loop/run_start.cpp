#include "trainers/loop/run_start.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "trainers/checkpoint/checkpoint_set.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {
namespace {

// What the resumed reports continue from, for the log: once, and saying so when the checkpoint has no history.
std::string describe_history(const ReportHistory& h, const ReportHistory& written, const TrainConfig& c) {
  if (!h.known)
    return "report history: none in this checkpoint (written before gradsync recorded it): the best accuracy, "
           "--target-accuracy and the elapsed times count from this run's first epoch";
  std::string text = fmt::format("report history: {:.2f}s of training before the checkpoint", h.elapsed_s);
  if (h.evaluations > 0)
    text += fmt::format(", best test accuracy {:.4f} over {} evaluation(s), the last after {} global step(s)",
                        h.best_accuracy, h.evaluations, h.evaluated_steps);
  if (!h.target_reached()) return text;
  if (h.target_steps < 0)
    return text + fmt::format("; target {:.4g} reached before it, when not known (its run's target: {:.4g})",
                              h.target_accuracy, written.target_accuracy);
  return text + fmt::format("; target {:.4g} reached after {:.2f}s, {:.1f} {}", h.target_accuracy, h.target_s,
                            h.target_steps, sync_family(c.sync.family).shape.rounds ? "round(s)" : "global step(s)");
}

// Rank 0: what a resumed run keeps and what changed with the world size (docs/reliability.md).
void print_resume(const ResumePoint& p, const TrainConfig& c, int ranks, int workers, std::size_t pieces) {
  const Manifest& m = p.manifest;
  fmt::print("resumed from the checkpoint of step {} (epoch {}, {} examples into it); {}\n", m.step, m.next_epoch + 1,
             m.epoch_examples, p.sources);
  if (!p.skipped.empty()) fmt::print("  not usable, skipped:{}\n", p.skipped);
  fmt::print("  {}\n", describe_history(starting_history(c, p), p.history, c));
  if (m.ranks != ranks || m.workers != workers || m.batch != c.batch)
    fmt::print(
        "  world changed: ranks {} -> {}, workers {} -> {}, servers {} -> {} ({} key ranges re-partitioned from "
        "{}); global batch {} -> {} ({} -> {} per worker); the data order (one permutation per epoch from the "
        "seed) and the position in it are kept\n",
        m.ranks, ranks, m.workers, workers, m.servers, c.server_ranks(), pieces, m.pieces.size(),
        m.batch * static_cast<std::uint64_t>(m.workers), c.batch * static_cast<std::size_t>(workers), m.batch, c.batch);
  std::fflush(stdout);
}

// The CRC the resumed optimizer state must have: the checkpoint's. When its size differs (a synchronizer whose state
// holds one residual per worker, resumed on another number of workers), the checkpoint's state cut to the new size or
// extended with zeros: the workers that remain keep their residuals, those that left take theirs along, new ones
// start from zero (compression/error_feedback.hpp).
// The state was checked against the manifest's CRC when it was put together (load_newest_checkpoint).
std::uint32_t expected_optimizer_crc(const ResumePoint& start, std::span<const float> now) {
  std::vector<float> expected(start.optimizer_state);
  expected.resize(now.size(), 0.0f);
  return crc32_floats(expected);
}

}  // namespace

ReportHistory starting_history(const TrainConfig& config, const ResumePoint& start) {
  ReportHistory h;
  h.known = true;
  if (config.resume) h = start.history;
  // A run without a target carries the checkpoint's crossing on, for a later run that has one.
  if (config.target_accuracy > 0 && h.target_accuracy != config.target_accuracy) {
    h.target_accuracy = config.target_accuracy;
    h.target_steps = h.target_s = -1;
  }
  return h;
}

ResumePoint starting_point(const TrainConfig& config, const Comm& world, const CheckpointSchedule& schedule,
                           const std::string& fingerprint, const Model& model) {
  if (config.resume) return load_newest_checkpoint(config, world, schedule.hosts(), fingerprint, model.parameter_count());
  ResumePoint start;
  start.params.resize(model.parameter_count());
  model.init(start.params, config.seed);  // the same on every rank: no broadcast needed
  return start;
}

void check_resumed_state(const ResumePoint& start, Roles& roles, const TrainConfig& config, const Comm& world,
                         std::size_t pieces) {
  const std::span<const float> params_now = roles.model_on_root();
  const std::span<const float> optimizer_now = roles.optimizer_state_on_root();
  const int me = world.rank();
  int equal = 1;
  if (me == 0) {
    print_resume(start, config, world.size(), roles.workers(), pieces);
    const std::uint32_t params_crc = crc32_floats(params_now), optimizer_crc = crc32_floats(optimizer_now);
    equal = params_crc == start.manifest.params_crc && optimizer_crc == expected_optimizer_crc(start, optimizer_now);
    fmt::print("resumed state: step {}, params crc {:08x}, optimizer crc {:08x}: {} the checkpoint's\n", start.steps_done,
               params_crc, optimizer_crc, equal ? "equal to" : "DIFFERENT from");
    std::fflush(stdout);
  }
  // A bug, not bad input; every rank stops, none trains on from a state that is not the checkpoint's.
  equal = world.broadcast(equal, 0);
  if (!equal) throw std::logic_error("the resumed state differs from the checkpoint's (see rank 0's CRCs)");
}

}  // namespace gradsync
