#include "collectives/rd_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/cost_model.hpp"

namespace gradsync {

void RecursiveDoublingAllreduce::plan_core(std::size_t count, std::vector<Exchange>& steps) const {
  const Fold& f = fold();
  const ElementRange all{0, count};
  for (int mask = 1; mask < f.core_size; mask <<= 1) {
    steps.push_back(swap(comm_rank_of_core(f, f.core_rank ^ mask), all, all, true));
  }
}

// log2 P steps of the whole message, each as slow as its slowest pair, after the fold of the ranks past a power of two.
std::optional<double> rd_cost(const CostModel& model, const CostQuery& q) {
  const CostLinks links(model, q);
  const double n = static_cast<double>(q.bytes);
  double t = links.fold_seconds(n);
  for (int k = 0; k < links.butterfly_levels(); ++k) {
    const LinkCost link = links.butterfly(1 << k);
    t += link.alpha_s + n * link.beta_s_per_byte + n * model.gamma_s_per_byte;
  }
  return t;
}

extern const AllreduceMethod rd_allreduce_method = {
    .name = "rd",
    .summary = "recursive doubling: log2 P steps of the whole buffer, for small messages",
    .segmented = true,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<RecursiveDoublingAllreduce>(comm, resolve_transport(comm, o, false));
    },
    .cost = rd_cost,
};

}  // namespace gradsync
