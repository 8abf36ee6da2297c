#include "collectives/rd_allreduce.hpp"

namespace gradsync {

void RecursiveDoublingAllreduce::plan_core(std::size_t count, std::vector<Exchange>& steps) const {
  const Fold& f = fold();
  const ElementRange all{0, count};
  for (int mask = 1; mask < f.core_size; mask <<= 1) {
    steps.push_back(swap(comm_rank_of_core(f, f.core_rank ^ mask), all, all, true));
  }
}

}  // namespace gradsync
