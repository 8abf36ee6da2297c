#pragma once
// Robust aggregation of one vector per rank (a gradient, a model update) into one vector on every rank, by an
// aggregator of aggregators.def, in two forms with the same interface:
// - segmented (the one to use): an all-to-all of segments (segment_scatter.hpp) so each rank holds every rank's copy
//   of its 1/p of the coordinates, the aggregator on that segment (plus, for krum, multikrum and bulyan, one
//   MPI_Allreduce of the p (p - 1) / 2 partial squared distances, for cclip one of p partial squared norms per
//   clipping step), then the ring's all-gather. Each rank sends 2 (p - 1) / p of the vector, as a ring allreduce.
// - gathered (the baseline it is measured against): every rank sends its whole vector to rank 0, which aggregates
//   and broadcasts the result: rank 0 receives (p - 1) whole vectors.
// The selections (Krum's winner, the clipping weights) are made from totals every rank holds alike, with ties going
// to the lower rank, so both forms give every rank the same bits. The segmented form relies on MPI_Allreduce
// returning the same double sums on every rank, as Open MPI's and MPICH's algorithms do for a commutative sum.
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/robust/aggregator_spec.hpp"

namespace gradsync {

enum class AggregationForm : std::uint8_t { segmented, gathered };

class RobustAggregation {
 public:
  virtual ~RobustAggregation() = default;

  // Collective over the communicator: every rank calls it with a vector of the same length. Replaces `mine` with the
  // aggregate of every rank's `mine`, the same bits on every rank. `mine` stays the caller's. Buffers are sized on
  // the first call of a length and reused after. A length that differs between ranks throws on every rank
  // (MismatchError, or std::invalid_argument from the gathered form) before any vector moves. An MpiError (a
  // failed MPI call) is fatal: end the job.
  virtual void run(std::span<float> mine) = 0;

  const AggregatorSpec& spec() const { return spec_; }
  const Comm& comm() const { return comm_; }

  // cclip's state, the previous aggregate that the next call clips around: empty before the first call (the first
  // reference is zero) and after a call of another length. The same on every rank; a checkpoint saves it and a
  // resumed run sets it back (set_reference, every rank the same values) to continue bit for bit.
  std::span<const float> reference() const { return reference_; }
  void set_reference(std::span<const float> values) { reference_.assign(values.begin(), values.end()); }

 protected:
  RobustAggregation(Comm comm, AggregatorSpec spec) : comm_(std::move(comm)), spec_(std::move(spec)) {}
  // The reference for a vector of `count` values: the previous aggregate if it had this length, else zeros.
  std::span<const float> reference_for(std::size_t count);
  void keep_reference(std::span<const float> aggregate);

  Comm comm_;
  AggregatorSpec spec_;
  std::vector<float> reference_;
};

// Builds `form` of the aggregator `spec_text` (parse_aggregator, with `byzantine` as the F or B it leaves out) on
// `comm`. Collective over `comm` (every rank builds it at the same point, with the same arguments). Throws
// std::invalid_argument naming the text and the numbers when it cannot parse or when comm.size() is too small for it
// (resolved_for), on every rank alike.
std::unique_ptr<RobustAggregation> make_robust_aggregation(const Comm& comm, std::string_view spec_text, int byzantine,
                                                           AggregationForm form = AggregationForm::segmented);

}  // namespace gradsync
