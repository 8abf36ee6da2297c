#include "trainers/core/epoch_work.hpp"

#include <algorithm>
#include <array>
#include <tuple>

#include "collectives/watchdog.hpp"

namespace gradsync {
namespace {

// Fields summed, and fields maxed, over all ranks at an epoch's end.
constexpr int kSummed = 12;
std::array<double, kSummed> summed(const EpochWork& w) {
  return {w.loss_sum, w.steps,         w.examples,        w.compute_s,         w.sync_s,   w.server_busy_s,
          w.server_s, w.staleness_sum, w.staleness_count, w.gradients_applied, w.hidden_s, w.wire_bytes};
}

void set_summed(EpochWork& w, const std::array<double, kSummed>& a) {
  std::tie(w.loss_sum, w.steps, w.examples, w.compute_s, w.sync_s, w.server_busy_s, w.server_s, w.staleness_sum,
           w.staleness_count, w.gradients_applied, w.hidden_s, w.wire_bytes) =
      std::tuple{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]};
}

}  // namespace

void accumulate(EpochWork& into, const EpochWork& part) {
  std::array<double, kSummed> a = summed(into);
  const std::array<double, kSummed> b = summed(part);
  for (int i = 0; i < kSummed; ++i) a[i] += b[i];
  set_summed(into, a);
  into.staleness_max = std::max(into.staleness_max, part.staleness_max);
  into.clock_gap_max = std::max(into.clock_gap_max, part.clock_gap_max);
}

EpochWork reduce_to_root(const Comm& world, const EpochWork& mine) {
  std::array<double, kSummed> sum = summed(mine);
  std::array<double, 2> max = {mine.staleness_max, mine.clock_gap_max};
  const WaitScope wait("MPI_Reduce (end-of-epoch statistics)");
  world.sum_to(0, sum);
  world.max_to(0, max);
  EpochWork all;
  set_summed(all, sum);
  all.staleness_max = max[0];
  all.clock_gap_max = max[1];
  return all;
}

}  // namespace gradsync
