#include "bench/flags/bench_compute_flags.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "bench/flags/command_line.hpp"
#include "model/models.hpp"

namespace gradsync::bench {

std::optional<int> parse_compute_flags(int argc, char** argv, ComputeFlags& f) {
  CLI::App app{"bench_compute: serial MNIST training throughput against the BLIS FLOP bound"};
  app.add_option("--epochs", f.epochs, "epochs per run")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--reps", f.reps, "runs per configuration (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--data", f.data_dir, "MNIST directory (default: data/mnist)");
  std::vector<std::string> names;
  for (const ModelInfo& m : model_table()) names.emplace_back(m.name);
  app.add_option("--models", f.models,
                 fmt::format("any of {} (space- or comma-separated; mlp is MLP-128, 2nn and cnn are McMahan et al.'s)",
                             model_names(", ")))
      ->delimiter(',')
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  app.add_option("--batches", f.batches, "batch sizes")->capture_default_str();
  app.add_flag("--compare-default", f.compare_default,
               "also run every configuration on BLIS's default kernel set alone, alternating with the plan run for run");
  app.add_option("--csv", f.csv, "also write one row per run to this CSV file (plots/make_charts.sh draws it)");
  app.add_flag("--remeasure", f.remeasure,
               "measure the kernel plan in this run instead of reading the cache (the rates printed are then this "
               "run's; the cache is left as it is)");
  app.add_flag("--peak", f.peak_only,
               "print the core's measured FMA peak at each vector width this build has, as 'avx512_gflops=X "
               "avx2_gflops=Y' (0: not in this build), and exit: no MPI, no data (scripts/common.sh cpu_summary)");
  return parse_command_line(app, "bench_compute", argc, argv, true);
}

}  // namespace gradsync::bench
