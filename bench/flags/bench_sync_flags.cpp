#include "bench/flags/bench_sync_flags.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench/flags/command_line.hpp"
#include "model/models.hpp"
#include "trace/recorder.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/core/sync_method.hpp"

namespace gradsync::bench {

namespace {

// The entry `text` spells, or nullopt with `problem` set: its words are not bench_sync's, its values not train's, or
// its method not one bench_sync runs.
std::optional<SyncMethodEntry> method_entry(const std::string& text, std::string& problem) {
  std::optional<SyncSpec> spec = parse_sync_spec(text, problem, kSyncWords);
  if (!spec) return std::nullopt;
  if (!spec->own_base.empty()) return SyncMethodEntry{*std::move(spec), TrainConfig{}};
  std::optional<TrainConfig> choices = spec_config(*spec, problem);
  if (!choices) return std::nullopt;
  if (choices->sync.family != SyncFamily::allreduce && choices->sync.family != SyncFamily::serial) {
    problem = fmt::format("'{}': bench_sync runs serial, xcore and the allreduce methods, not --sync {}", text,
                          choices->sync.name());
    return std::nullopt;
  }
  if (choices->average_every > 0) {  // the parallel methods step one shared replica, which must stay the same
    problem = fmt::format("'{}': bench_sync times gradient synchronization, not local SGD's averages (+average)", text);
    return std::nullopt;
  }
  return SyncMethodEntry{*std::move(spec), *std::move(choices)};
}

// Empty, or why a --methods entry is not one bench_sync runs.
std::string method_problem(const std::string& entry) {
  std::string problem;
  method_entry(entry, problem);
  return problem;
}

}  // namespace

TrainConfig SyncMethodEntry::run(const TrainConfig& base) const {
  TrainConfig c = choices;
  c.model = base.model;
  c.hidden = base.hidden;
  c.bucket_bytes = base.bucket_bytes;
  c.batch = base.batch;
  c.data_dir = base.data_dir;
  return c;
}

std::optional<int> parse_sync_flags(int argc, char** argv, bool lead, SyncFlags& f) {
  CLI::App app{"bench_sync: synchronizers alternated within one training run, whole steps timed per method"};
  app.add_option("--methods", f.method_entries,
                 fmt::format("comma-separated sync specs as train --spec takes them (train --help lists every "
                             "modifier and the flag it stands for): METHOD[+MODIFIER...], METHOD serial (rank 0 "
                             "alone: the baseline for the speedup column), an allreduce method that leaves the sum on "
                             "every rank ({}) or xcore (the ring's schedule through a shared window, one node only, "
                             "no modifier but +traced); e.g. +buckets, +pipe+thread, +compress=NAME[:PARAM], +noef. "
                             "+traced: with --trace, only the +traced methods' steps are recorded (ring,ring+traced "
                             "measures what tracing costs). E.g. ring+compress=topk:0.01+pipe+thread",
                             allreduce_method_names(trains)))
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Validator(method_problem, "SPEC"));
  app.add_option("--batch", f.batch, "batch per worker")->capture_default_str()->check(CLI::Range(1, 60000));
  std::vector<std::string> models;
  for (const ModelInfo& m : model_table()) models.emplace_back(m.name);
  std::string model(f.model->name);
  app.add_option("--model", model, fmt::format("the model trained: {} (as train's --model)", model_names(", ")))
      ->capture_default_str()
      ->check(CLI::IsMember(models));
  app.add_option("--hidden", f.hidden, "the mlp's hidden widths, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--bucket-kib", f.bucket_kib, "bucket size of the -buckets methods")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_option("--steps", f.steps, "training steps in all")->capture_default_str()->check(CLI::Range(1L, 1L << 40));
  app.add_option("--block", f.block, "steps per method before switching")
      ->capture_default_str()
      ->check(CLI::Range(1L, 1L << 40));
  app.add_option("--settle", f.settle,
                 "untimed steps at the start of each block, fewer than --block: a switch of method, or a core just "
                 "woken from a serial block, is not the steady state")
      ->capture_default_str()
      ->check(CLI::Range(0L, 1L << 40));
  app.add_option("--data", f.data_dir, "MNIST directory (default: data/mnist)");
  app.add_option("--trace", f.trace,
                 fmt::format("write a Chrome trace of the last {} steps to this file (docs/observability.md)",
                             TraceWindow::kDefaultLastSteps));
  app.add_option("--csv", f.csv,
                 "append a row per method to this CSV file: the table's columns and one per dimension (family, "
                 "allreduce, compressor, mode)");
  if (const std::optional<int> done = parse_command_line(app, "bench_sync", argc, argv, lead)) return done;
  f.model = find_model(model);                         // checked by the option
  for (const std::string& entry : f.method_entries) {  // each passed --methods' check
    std::string problem;
    f.methods.push_back(*method_entry(entry, problem));
  }
  return std::nullopt;
}

}  // namespace gradsync::bench
