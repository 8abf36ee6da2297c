#include "bench/flags/bench_batch_layout_flags.hpp"

#include "bench/flags/command_line.hpp"

namespace gradsync::bench {

std::optional<int> parse_batch_layout_flags(int argc, char** argv, BatchLayoutFlags& f) {
  CLI::App app{"bench_batch_layout: the input layer's gather and GEMMs for each layout of the batch, and on its bytes"};
  app.add_option("--data", f.data_dir, "MNIST directory (default: data/mnist)");
  app.add_option("--batches", f.batches, "batch sizes")->capture_default_str();
  app.add_option("--outputs", f.outputs, "input layer widths (10: softmax regression, 128: MLP-128)")
      ->capture_default_str();
  app.add_option("--rounds", f.rounds, "rounds; each times every variant once, in rotating order")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--block-seconds", f.block_s, "time per variant per round")->capture_default_str();
  return parse_command_line(app, "bench_batch_layout", argc, argv, true);
}

}  // namespace gradsync::bench
