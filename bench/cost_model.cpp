// cost_model: the predictions auto chooses by (collectives/cost_model.hpp), as CSV, without MPI. The fit script
// (bench/cluster/fit_cost_model.py) and the charts read them from here, so the formulas live in one place.
//   build/bin/cost_model --tuning FILE --np 4 --ranks-per-host 1 --min-bytes 4 --max-bytes 64M
// Rows: method,np,ranks_per_host,bytes,predicted_us for every modelled method (collectives/methods.hpp) that applies,
// then one "auto" row per size with the time of the method auto would choose.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>

#include "bench/bench_options.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/methods.hpp"

int main(int argc, char** argv) {
  using namespace gradsync;
  CLI::App app{"cost_model: predicted allreduce times of the modelled methods (what auto chooses by), as CSV"};
  std::string tuning, min_bytes = "4", max_bytes = "64M";
  int np = 2, per_host = 0;
  double step = 2;
  std::size_t chunk = kNetworkChunkBytes;
  app.add_option("--tuning", tuning, "tuning file (default: where auto looks, else the built-in defaults)");
  app.add_option("--np", np, "ranks")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks-per-host", per_host, "ranks per host (default: one host of --np ranks)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--min-bytes", min_bytes, "smallest size")->capture_default_str();
  app.add_option("--max-bytes", max_bytes, "largest size")->capture_default_str();
  app.add_option("--step-factor", step, "size ratio between rows")->capture_default_str();
  app.add_option("--chunk-bytes", chunk, "message size of the chunked methods")->capture_default_str();
  try {
    app.parse(argc, argv);
    const std::size_t lo = bench::parse_bytes(min_bytes, "--min-bytes"),
                      hi = bench::parse_bytes(max_bytes, "--max-bytes");
    if (lo == 0 || hi < lo || !(step > 1))
      throw std::invalid_argument("need 1 <= --min-bytes <= --max-bytes, --step-factor > 1");
    const CostModel model = tuning.empty() ? find_cost_model() : load_cost_model(tuning);
    const int l = per_host > 0 ? per_host : np;
    fmt::print("method,np,ranks_per_host,bytes,predicted_us\n");
    for (double b = static_cast<double>(lo); b <= static_cast<double>(hi) * 1.0000001; b *= step) {
      const auto bytes = static_cast<std::size_t>(std::llround(b));
      double best = std::numeric_limits<double>::infinity();
      for (const AllreduceMethod& m : allreduce_method_table()) {
        if (!m.modelled || (m.two_level && (l <= 1 || l >= np))) continue;
        const auto t = model.predict(m.name, bytes, np, l, m.chunked ? chunk : 0);
        if (!t) continue;
        best = std::min(best, *t);
        fmt::print("{},{},{},{},{:.3f}\n", m.name, np, l, bytes, *t * 1e6);
      }
      fmt::print("auto,{},{},{},{:.3f}\n", np, l, bytes, best * 1e6);
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cost_model: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
