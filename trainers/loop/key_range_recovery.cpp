#include "trainers/loop/key_range_recovery.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/allreduce.hpp"

namespace gradsync {
namespace {

// What each survivor holds, as one fixed-size row of the all-gather (a mismatch cannot hang it).
struct Holding {
  std::int64_t server = -1, steps = 0, has_previous = 0;
};

bool holds(std::int64_t server, int range, int servers, int holders) {
  return server >= 0 && (server - range + servers) % servers < holders;
}

}  // namespace

KeyRangeRecovery recover_key_ranges(const Comm& survivors, int servers, int holders, LiveState& mine) {
  const std::array<std::int64_t, 3> row{mine.server, mine.applied, mine.has_previous ? 1 : 0};
  const std::vector<std::int64_t> rows = survivors.all_gather(std::span<const std::int64_t>(row));
  const int n = survivors.size();
  std::vector<Holding> all(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) all[i] = {rows[3 * i], rows[3 * i + 1], rows[3 * i + 2]};
  KeyRangeRecovery out;
  out.servers_left = static_cast<int>(std::ranges::count_if(all, [](const Holding& h) { return h.server >= 0; }));
  if (out.servers_left == 0)
    throw InPlaceRecoveryError("in-place recovery: every parameter server was lost, and the model with them",
                               survivors.rank() == 0);

  const std::size_t count = mine.params.size();
  // The newest step of each range among its holders; the run continues from the lowest of them.
  std::int64_t step = std::numeric_limits<std::int64_t>::max();
  for (int k = 0; k < servers; ++k) {
    std::int64_t newest = -1;
    for (const Holding& h : all)
      if (holds(h.server, k, servers, holders)) newest = std::max(newest, h.steps);
    if (newest < 0) {
      const ElementRange r = partition(count, static_cast<std::size_t>(servers), static_cast<std::size_t>(k));
      throw InPlaceRecoveryError(
          fmt::format("in-place recovery: key range {} (parameters {}..{}) was held by {} server(s) and all of them "
                      "were lost (--replicas {}: each range lives on that many servers); the run cannot continue",
                      k, r.begin, r.end - 1, holders, holders),
          survivors.rank() == 0);
    }
    step = std::min(step, newest);
  }
  // Each range from the lowest-ranked survivor holding it at `step`: now, or one round back.
  for (int k = 0; k < servers; ++k) {
    int source = -1;
    bool previous = false;
    for (int i = 0; i < n && source < 0; ++i)
      if (holds(all[i].server, k, servers, holders) && all[i].steps == step) source = i;
    for (int i = 0; i < n && source < 0; ++i)
      if (holds(all[i].server, k, servers, holders) && all[i].steps == step + 1 && all[i].has_previous)
        source = i, previous = true;
    if (source < 0)
      throw InPlaceRecoveryError(
          fmt::format("in-place recovery: no survivor holds key range {} at step {}, the newest every range has (a "
                      "bug: the servers' rounds drifted apart)",
                      k, step),
          survivors.rank() == 0);
    const ElementRange r = partition(count, static_cast<std::size_t>(servers), static_cast<std::size_t>(k));
    const std::span<float> params = std::span(mine.params).subspan(r.begin, r.size());
    const bool has_state = !mine.optimizer.empty();
    const std::span<float> state = has_state ? std::span(mine.optimizer).subspan(r.begin, r.size()) : std::span<float>();
    if (survivors.rank() == source && previous) {
      std::copy_n(mine.previous_params.begin() + static_cast<std::ptrdiff_t>(r.begin), r.size(), params.begin());
      if (has_state)
        std::copy_n(mine.previous_optimizer.begin() + static_cast<std::ptrdiff_t>(r.begin), r.size(), state.begin());
    }
    if (!params.empty()) survivors.broadcast(params, source);
    if (!state.empty()) survivors.broadcast(state, source);
  }
  out.step = step;
  return out;
}

}  // namespace gradsync
