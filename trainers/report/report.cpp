#include "trainers/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "trainers/core/sync_registry.hpp"

namespace gradsync {
namespace {

// A byte count for a CSV field: empty when it was not counted (negative).
std::string bytes_field(double bytes) { return bytes < 0 ? std::string{} : fmt::format("{:.0f}", bytes); }
// A value that only some runs have: empty when absent (negative).
std::string optional_field(double v) { return v < 0 ? std::string{} : fmt::format("{:.6f}", v); }

}  // namespace

std::string format_epoch(const EpochReport& r) {
  std::string line = fmt::format(
      "{} {}/{}  loss {:.4f}  test acc {:.4f}{}  {:.0f} img/s  compute {:.2f}s  sync {:.2f}s  "
      "elapsed {:.2f}s",
      r.round ? "round" : "epoch", r.epoch, r.epochs, r.train_loss, r.test_accuracy,
      r.round ? fmt::format(" (best {:.4f})", r.best_accuracy) : std::string{}, r.images_per_s, r.compute_s, r.sync_s,
      r.elapsed_s);
  if (r.hidden_s > 0) line += fmt::format("  hidden {:.2f}s", r.hidden_s);
  if (r.wire_bytes_per_step > 0)
    line += fmt::format("  wire {:.1f} KB/{}", r.wire_bytes_per_step / 1024, r.round ? "round" : "step");
  if (r.server_busy >= 0) line += fmt::format("  server busy {:.0f}%", 100 * r.server_busy);
  if (r.staleness_mean >= 0) line += fmt::format("  staleness mean {:.2f} max {:.0f}", r.staleness_mean, r.staleness_max);
  if (r.clock_gap_max >= 0) line += fmt::format("  clock gap max {:.0f}", r.clock_gap_max);
  if (r.consensus_distance >= 0)
    line += fmt::format("  consensus {:.3g}  own acc {:.4f}-{:.4f}", r.consensus_distance, r.replica_accuracy_min,
                        r.replica_accuracy_max);
  if (r.dp_epsilon >= 0) line += fmt::format("  epsilon {:.3f}", r.dp_epsilon);
  return line;
}

std::string format_summary(const TrainResult& r) {
  if (r.epochs.empty())  // --stop-at-target after a resume whose checkpoint had reached the target
    return fmt::format("done: {} {} on {} rank(s) ({} worker(s)): nothing trained", r.sync_name, r.model_name, r.ranks,
                       r.workers);
  const double total = r.compute_s + r.sync_s;
  return fmt::format(
      "done: {} {} on {} rank(s) ({} worker(s)): test accuracy {:.4f}, train loss {:.4f}, {:.2f}s "
      "training ({:.0f} img/s), sync share {:.0f}%",
      r.sync_name, r.model_name, r.ranks, r.workers, r.test_accuracy, r.train_loss, r.wall_s, r.images_per_s,
      total > 0 ? 100 * r.sync_s / total : 0.0);
}

std::string format_recoveries(const TrainResult& r) {
  if (r.recoveries.empty()) return {};
  std::vector<int> lost;
  std::int64_t redone = 0;
  double seconds = 0, join_seconds = 0;
  int joined = 0;
  for (const RecoveryReport& x : r.recoveries) {
    lost.insert(lost.end(), x.lost.begin(), x.lost.end());
    redone += x.lost_steps;
    seconds += x.seconds;
    joined += x.joined;
    join_seconds += x.join_seconds;
  }
  std::string text = fmt::format(
      "in place: {} recover{}, rank{} {} lost, {} step{} done again, {:.3f} s from failures to re-formed runs",
      r.recoveries.size(), r.recoveries.size() == 1 ? "y" : "ies", lost.size() == 1 ? "" : "s", fmt::join(lost, ", "),
      redone, redone == 1 ? "" : "s", seconds);
  if (joined > 0)
    text += fmt::format("; {} successor{} joined in {:.3f} s", joined, joined == 1 ? "" : "s", join_seconds);
  return text;
}

std::string describe_family(const TrainConfig& c, int ranks) {
  const SyncFamilyInfo& family = sync_family(c.sync.family);
  return family.report.setup_line ? family.report.setup_line(c, ranks) : std::string{};
}

std::string format_target(const TrainResult& r) {
  if (r.target_accuracy <= 0) return {};
  if (r.target_elapsed_s < 0 && r.best_accuracy >= r.target_accuracy)
    return fmt::format(
        "target {:.4g} reached before the checkpoint this run resumed from; when is not known (that run recorded "
        "the crossing of another --target-accuracy, or none)",
        r.target_accuracy);
  if (r.target_elapsed_s < 0)
    return fmt::format("target {:.4g} not reached (best test accuracy {:.4f})", r.target_accuracy, r.best_accuracy);
  if (r.rounds)  // the literature's count (McMahan et al. 2017), on a line of its own for scripts
    return fmt::format("target {:.4g} reached after {:.2f}s of training\nrounds to {:.4g}: {:.1f}", r.target_accuracy,
                       r.target_elapsed_s, r.target_accuracy, r.target_steps);
  return fmt::format("target {:.4g} reached after {:.2f}s of training, {:.0f} global steps", r.target_accuracy,
                     r.target_elapsed_s, r.target_steps);
}

std::string sync_dimension_fields(const TrainConfig& c) {
  const SyncDimensions d = c.sync_dimensions();
  return fmt::format("{},{},{},{}", d.family, d.allreduce, d.compressor, d.mode);
}

std::string csv_row(const TrainConfig& c, const TrainResult& r) {
  const double worker_steps = static_cast<double>(r.steps) * r.workers;
  return fmt::format("{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.1f},{:.6f},{},{}", r.sync_name,
                     r.model_name, dataset_name(c.dataset), r.ranks, r.workers, c.epochs, c.batch, c.sgd.lr, c.seed,
                     r.wall_s, r.compute_s, r.sync_s, r.train_loss, r.test_accuracy, r.images_per_s, r.hidden_s,
                     bytes_field(r.wire_bytes < 0 ? -1 : r.wire_bytes / std::max(worker_steps, 1.0)),
                     sync_dimension_fields(c));
}

void append_csv_line(const std::string& flag, const std::string& path, const char* header, const std::string& line) {
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw std::runtime_error(fmt::format("{} {}: cannot open for appending: {}", flag, path, std::strerror(errno)));
  if (fresh) fmt::print(f, "{}\n", header);
  fmt::print(f, "{}\n", line);
  if (std::fclose(f) != 0)
    throw std::runtime_error(fmt::format("{} {}: write failed: {}", flag, path, std::strerror(errno)));
}

void append_csv(const std::string& path, const TrainConfig& config, const TrainResult& r) {
  append_csv_line("--csv", path, kTrainCsvHeader, csv_row(config, r));
}

void append_epoch_csv(const std::string& path, const TrainConfig& c, int ranks, const EpochReport& r) {
  // staleness_bound: -2 none (no parameter server), -1 unbounded (asp), else the bound (bsp: 0).
  const SyncFamilyInfo& family = sync_family(c.sync.family);
  const int bound = family.report.staleness_bound ? family.report.staleness_bound(c) : -2;
  append_csv_line(
      "--epoch-csv", path, kEpochCsvHeader,
      fmt::format(
          "{},{},{},{:.6f},{:.6f},{:.6f},{:.1f},{:.6f},{:.6f},{},{:.4f},{:.0f},{:.0f},{},{},{},{},{},{},{:.6f},{}",
          c.sync_name(), ranks, r.epoch, r.elapsed_s, r.test_accuracy, r.train_loss, r.images_per_s, r.compute_s,
          r.sync_s, bound, std::max(r.staleness_mean, 0.0), std::max(r.staleness_max, 0.0),
          std::max(r.clock_gap_max, 0.0), bytes_field(r.wire_bytes_per_step), r.global_steps,
          r.consensus_distance < 0 ? std::string{} : fmt::format("{:.6g}", r.consensus_distance),
          optional_field(r.replica_accuracy_min), optional_field(r.replica_accuracy_max), optional_field(r.spectral_gap),
          r.best_accuracy, sync_dimension_fields(c)));
}

}  // namespace gradsync
