#pragma once
// cost_model's flags (bench/cost_model.cpp).
#include <cstddef>
#include <optional>
#include <string>

#include "collectives/allreduce.hpp"

namespace gradsync::bench {

struct CostModelFlags {
  std::string tuning, min_bytes = "4", max_bytes = "64M";
  int np = 2, per_host = 0;
  double step = 2;
  std::size_t chunk = kNetworkChunkBytes;
  bool gossip = false;  // rows of one gossip step per topology (collectives/gossip_cost.hpp) instead of allreduces
};

// Parses cost_model's command line into `f` (one process, no MPI). Returns std::nullopt to go on, or the exit code
// to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_cost_model_flags(int argc, char** argv, CostModelFlags& f);

}  // namespace gradsync::bench
