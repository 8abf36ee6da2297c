#include "collectives/rhd_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/cost_model.hpp"

namespace gradsync {

//   P' = 4, pieces 0..3.   reduce-scatter                       all-gather (the same partners, reversed)
//   step 0 (c ^ 1): 0,1 split [0..3]: 0 keeps 0-1, 1 keeps 2-3    step 0 (c ^ 2): 0 and 2 swap pieces 0 and 1
//   step 1 (c ^ 2): 0,2 split [0-1]:  0 keeps 0, 2 keeps 1        step 1 (c ^ 1): 0 and 1 swap pieces 0-1 and 2-3
// A window is a run of whole pieces, so its elements are contiguous and both partners compute the same bounds.
void RecursiveHalvingDoublingAllreduce::plan_core(std::size_t count, std::vector<Exchange>& steps) const {
  const Fold& f = fold();
  const int c = f.core_rank, n = f.core_size;
  const auto elements = [&](int first, int end) {  // pieces [first, end) as an element range
    return ElementRange{partition(count, n, first).begin, partition(count, n, end - 1).end};
  };
  int lo = 0, hi = n;  // this rank's window of pieces
  for (int mask = 1; mask < n; mask <<= 1) {
    const int partner = c ^ mask, mid = (lo + hi) / 2;
    const bool lower = c < partner;
    const ElementRange keep = lower ? elements(lo, mid) : elements(mid, hi);
    const ElementRange give = lower ? elements(mid, hi) : elements(lo, mid);
    steps.push_back(swap(comm_rank_of_core(f, partner), give, keep, true));
    (lower ? hi : lo) = mid;
  }
  for (int mask = n / 2; mask >= 1; mask >>= 1) {
    const int partner = c ^ mask, size = hi - lo;
    const bool lower = c < partner;
    const int sibling_lo = lower ? hi : lo - size;
    steps.push_back(
        swap(comm_rank_of_core(f, partner), elements(lo, hi), elements(sibling_lo, sibling_lo + size), false));
    lo = lower ? lo : sibling_lo;
    hi = lo + 2 * size;
  }
}

// Halving: step k trades half of what is left with the core rank 2^k away; doubling brings it back the same way.
std::optional<double> rhd_cost(const CostModel& model, const CostQuery& q) {
  const CostLinks links(model, q);
  const double n = static_cast<double>(q.bytes);
  double t = links.fold_seconds(n), piece = n;
  for (int k = 0; k < links.butterfly_levels(); ++k) {
    piece /= 2;
    const LinkCost link = links.butterfly(1 << k);
    t += 2 * (link.alpha_s + piece * link.beta_s_per_byte) + piece * model.gamma_s_per_byte;
  }
  return t;
}

extern const AllreduceMethod rhd_allreduce_method = {
    .name = "rhd",
    .summary = "recursive halving and doubling (Rabenseifner): 2 log2 P steps of halving, then doubling, pieces",
    .segmented = true,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<RecursiveHalvingDoublingAllreduce>(comm, resolve_transport(comm, o, false));
    },
    .cost = rhd_cost,
};

}  // namespace gradsync
