// cost_model: the predictions auto chooses by (collectives/cost_model.hpp), as CSV, without MPI. The fit script
// (bench/cluster/fit_cost_model.py) and the charts read them from here, so the formulas live in one place.
//   build/bin/cost_model --tuning FILE --np 4 --ranks-per-host 1 --min-bytes 4 --max-bytes 64M
// Rows: method,np,ranks_per_host,bytes,predicted_us for every modelled method (collectives/methods.hpp) that applies,
// then one "auto" row per size with the time of the method auto would choose: the first in the registry's order within
// AutoAllreduce::kTieMargin of the fastest, as auto breaks near-ties (not always the fastest). With --gossip: one row per
// topology and size, gossip-TOPOLOGY and gossip-TOPOLOGY-async, the predicted time of one step's exchange of a model of
// that size (collectives/gossip_cost.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "bench/bench_options.hpp"
#include "bench/flags/cost_model_flags.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/auto_allreduce.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/gossip_cost.hpp"
#include "collectives/methods.hpp"

int main(int argc, char** argv) {
  using namespace gradsync;
  bench::CostModelFlags f;
  if (const std::optional<int> done = bench::parse_cost_model_flags(argc, argv, f)) return *done;
  try {
    const std::size_t lo = bench::parse_bytes(f.min_bytes, "--min-bytes"),
                      hi = bench::parse_bytes(f.max_bytes, "--max-bytes");
    if (lo == 0 || hi < lo || !(f.step > 1))
      throw std::invalid_argument("need 1 <= --min-bytes <= --max-bytes, --step-factor > 1");
    const CostModel model = f.tuning.empty() ? find_cost_model() : load_cost_model(f.tuning);
    const int l = f.per_host > 0 ? f.per_host : f.np;
    fmt::print("method,np,ranks_per_host,bytes,predicted_us\n");
    for (double b = static_cast<double>(lo); b <= static_cast<double>(hi) * 1.0000001; b *= f.step) {
      const auto bytes = static_cast<std::size_t>(std::llround(b));
      if (f.gossip) {
        for (const TopologyInfo& t : topology_table())
          for (bool async : {false, true})
            fmt::print("gossip-{}{},{},{},{},{:.3f}\n", t.name, async ? "-async" : "", f.np, l, bytes,
                       predict_gossip_step(model, t.id, bytes, f.np, l, async) * 1e6);
        continue;
      }
      std::vector<double> predicted;  // in the registry's order, auto's tie-break
      for (const AllreduceMethod& m : allreduce_method_table()) {
        if (!m.modelled() || (m.two_level && (l <= 1 || l >= f.np))) continue;
        const auto t = model.predict(m.name, bytes, f.np, l, m.chunked ? f.chunk : 0);
        if (!t) continue;
        predicted.push_back(*t);
        fmt::print("{},{},{},{},{:.3f}\n", m.name, f.np, l, bytes, *t * 1e6);
      }
      if (predicted.empty()) continue;  // no modelled method for this layout: nothing for auto to choose
      const double fastest = *std::min_element(predicted.begin(), predicted.end());
      const double chosen = *std::find_if(predicted.begin(), predicted.end(),
                                          [&](double t) { return t <= fastest * (1 + AutoAllreduce::kTieMargin); });
      fmt::print("auto,{},{},{},{:.3f}\n", f.np, l, bytes, chosen * 1e6);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "cost_model: error: {}\n", e.what());
    return 2;
  }
  return 0;
}
