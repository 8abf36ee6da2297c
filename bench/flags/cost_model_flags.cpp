#include "bench/flags/cost_model_flags.hpp"

#include "bench/flags/command_line.hpp"

namespace gradsync::bench {

std::optional<int> parse_cost_model_flags(int argc, char** argv, CostModelFlags& f) {
  CLI::App app{"cost_model: predicted allreduce times of the modelled methods (what auto chooses by), as CSV"};
  app.add_option("--tuning", f.tuning, "tuning file (default: where auto looks, else the built-in defaults)");
  app.add_option("--np", f.np, "ranks")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks-per-host", f.per_host, "ranks per host (default: one host of --np ranks)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--min-bytes", f.min_bytes, "smallest size")->capture_default_str();
  app.add_option("--max-bytes", f.max_bytes, "largest size")->capture_default_str();
  app.add_option("--step-factor", f.step, "size ratio between rows")->capture_default_str();
  app.add_option("--chunk-bytes", f.chunk, "message size of the chunked methods")->capture_default_str();
  app.add_flag("--gossip", f.gossip,
               "instead: one gossip step's exchange of a model of each size, per topology, synchronous and --async");
  return parse_command_line(app, "cost_model", argc, argv, true);
}

}  // namespace gradsync::bench
