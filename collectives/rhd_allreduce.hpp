#pragma once
#include "collectives/exchange_allreduce.hpp"

namespace gradsync {

// Recursive halving and doubling ("rhd", Rabenseifner's algorithm), for large messages at any P. The buffer is cut
// into P' pieces (partition()). Reduce-scatter by recursive halving: in step k (k = 0 .. log2 P' - 1) core rank c
// and c ^ 2^k share a window of pieces; the lower rank keeps the lower half, the higher the upper half, each sends
// the other half and adds the half it receives, so the window halves every step and ends as one piece summed over
// the whole core. All-gather by recursive doubling: the same partners in reverse order swap windows, which double
// back to the whole buffer. Each rank sends 2(P'-1)/P' * count elements in 2 log2 P' messages (plus the folds of a P
// that is not a power of two, ExchangeAllreduce), and each element is summed by one owner and copied, so every rank
// ends with the same bits. With count < P' some pieces are empty: their messages are sent empty, never skipped.
// Every type; exact for integers. Scratch: half the buffer (the whole buffer on a rank that folds).
class RecursiveHalvingDoublingAllreduce final : public ExchangeAllreduce {
 public:
  // Local (no communication); run() is then collective over `comm`.
  RecursiveHalvingDoublingAllreduce(Comm comm, AllreduceOptions options) : ExchangeAllreduce(std::move(comm), options) {}
  std::string_view name() const override { return "rhd"; }

 private:
  void plan_core(std::size_t count, std::vector<Exchange>& steps) const override;
};

}  // namespace gradsync
