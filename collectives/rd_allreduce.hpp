#pragma once
#include "collectives/exchange_allreduce.hpp"

namespace gradsync {

// Recursive doubling ("rd"), for small messages: in step k every core rank swaps its whole buffer with core rank
// c ^ 2^k and adds, so after log2 P' steps every core rank holds the sum. It pays log2 P' latencies (the ring pays
// 2(P-1)) but sends the whole buffer each step, count * log2 P' elements per rank instead of the ring's
// 2(P-1)/P * count. A P that is not a power of two adds a fold message before and after (ExchangeAllreduce).
// Every type; exact for integers; every rank ends with the same bits. Scratch: one buffer of `count` elements.
class RecursiveDoublingAllreduce final : public ExchangeAllreduce {
 public:
  // Local (no communication); run() is then collective over `comm`.
  RecursiveDoublingAllreduce(Comm comm, AllreduceOptions options) : ExchangeAllreduce(std::move(comm), options) {}
  std::string_view name() const override { return "rd"; }

 private:
  void plan_core(std::size_t count, std::vector<Exchange>& steps) const override;
};

}  // namespace gradsync
