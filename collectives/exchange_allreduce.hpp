#pragma once
#include <cstddef>
#include <vector>

#include "collectives/exchange_schedule.hpp"

namespace gradsync {

// What recursive doubling (rd_allreduce.hpp) and recursive halving and doubling (rhd_allreduce.hpp) share: both
// run a butterfly over a power-of-two "core" of ranks, and both fold the ranks beyond it in and out as MPICH does.
// On P ranks with P' the largest power of two <= P and E = P - P' extra ranks, the first 2E ranks pair up as
// (2i, 2i+1): the even rank hands its whole buffer to the odd one, which adds it in and takes core rank i; the
// even rank then waits for the finished result from its partner. Ranks 2E.. take core ranks r - E. Core ranks keep
// the order of comm ranks, so "lower core rank" means "lower comm ranks' data" everywhere.
//
// Every rank ends with the same bits because each element's result is one fixed tree of additions: the fold pairs,
// then at level k the partial sums of two blocks of 2^k core ranks (c and c ^ 2^k agree above bit k). rd evaluates
// it on every rank, rhd on one owner per element, both in the same tree, so they give the same bits as each other.
// Which partner holds which operand does not matter: IEEE addition is commutative (NaN payloads aside).
//
// A subclass plans only the core's exchanges (plan_core); this class adds the folds, and ScheduledAllreduce runs
// the plan one exchange per stage, each direction cut into pieces of at most options.segment_bytes (segments.hpp).
// Scratch is one received range, grown only when a larger shape is planned.
class ExchangeAllreduce : public ScheduledAllreduce {
 public:
  // Where this rank stands. Local: computed from the communicator's rank and size alone.
  struct Fold {
    int core_size = 1;   // P'
    int extra = 0;       // E
    int core_rank = -1;  // this rank's place in the core; -1 for an even rank that sits the core out
    int partner = -1;    // the rank this one folds with, -1 if it takes no part in a fold
  };
  static Fold fold_of(int rank, int size);
  // The comm rank that holds core rank `core`.
  static int comm_rank_of_core(const Fold& fold, int core) {
    return core < fold.extra ? 2 * core + 1 : core + fold.extra;
  }
  const Fold& fold() const { return fold_; }

 protected:
  // Local (no communication) apart from reserving two tags on `comm` (Comm::reserve_tags); run() is then collective
  // over `comm`. options.segment_bytes must be resolved (> 0: make_allreduce does it; std::invalid_argument
  // otherwise).
  ExchangeAllreduce(Comm comm, AllreduceOptions options);

  // The core's pairwise exchange with comm rank `peer`: sends `send` and receives `recv`, which is added in or
  // (add == false) replaces those elements. Both partners plan it from the same (count, fold).
  static Exchange swap(int peer, ElementRange send, ElementRange recv, bool add);
  // Appends the core's exchanges for a reduction of `count` elements; called on core ranks only, once per shape.
  virtual void plan_core(std::size_t count, std::vector<Exchange>& steps) const = 0;

 private:
  void plan(std::size_t count, Dtype type, Schedule& schedule) const override;

  Fold fold_;
};

}  // namespace gradsync
