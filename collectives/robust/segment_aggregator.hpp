#pragma once
// One aggregator (aggregator_spec.hpp) applied to n workers' copies of a segment: the part of robust aggregation both
// forms share (robust_aggregation.hpp). The distances Krum and Bulyan select by and the norms centered clipping
// weighs by are sums over the whole vector; this class computes its segment's share and asks `Totals` for the sum,
// so the segmented form allreduces them and the gathered form, holding the whole vector, takes them as they are.
#include <span>
#include <vector>

#include "collectives/robust/aggregator_spec.hpp"
#include "collectives/robust/segment_kernels.hpp"

namespace gradsync {

// Turns per-segment partial sums into totals over the whole vector, in place, with the same bits on every rank.
class Totals {
 public:
  virtual ~Totals() = default;
  // Called the same number of times, with spans of the same length, on every rank that aggregates.
  virtual void total(std::span<double> partial) = 0;
};

class SegmentAggregator {
 public:
  // `spec` resolved for `n` workers (resolved_for). Local.
  SegmentAggregator(const AggregatorSpec& spec, int n);

  // Aggregates `rows` (n rows of out.size() coordinates) into `out`. For cclip, `out` holds the reference (this
  // segment of the previous aggregate) on entry. Calls totals.total once for the distances (krum, multikrum, bulyan)
  // or once per clipping step (cclip), never for the others. Scratch grows on the first call of a size, then stays.
  void run(const SegmentRows& rows, std::span<float> out, Totals& totals);

  const AggregatorSpec& spec() const { return spec_; }

 private:
  AggregatorSpec spec_;
  int n_;
  std::vector<double> partial_, column_, scratch_;
  std::vector<int> chosen_;
};

}  // namespace gradsync
