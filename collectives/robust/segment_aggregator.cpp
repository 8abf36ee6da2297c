#include "collectives/robust/segment_aggregator.hpp"

#include <algorithm>

namespace gradsync {

SegmentAggregator::SegmentAggregator(const AggregatorSpec& spec, int n) : spec_(spec), n_(n) {
  partial_.reserve(std::max(pair_count(n), static_cast<std::size_t>(n)));
  column_.reserve(static_cast<std::size_t>(n));
  scratch_.reserve(static_cast<std::size_t>(n));
  chosen_.reserve(static_cast<std::size_t>(n));
}

void SegmentAggregator::run(const SegmentRows& rows, std::span<float> out, Totals& totals) {
  switch (spec_.kind) {
    case AggregatorKind::mean:
      chosen_.resize(static_cast<std::size_t>(n_));
      for (int i = 0; i < n_; ++i) chosen_[static_cast<std::size_t>(i)] = i;
      coordinate_mean(rows, chosen_, out);
      return;
    case AggregatorKind::median: coordinate_median(rows, out, column_); return;
    case AggregatorKind::trimmed: coordinate_trimmed_mean(rows, spec_.f, out, column_); return;
    case AggregatorKind::cclip:
      for (int step = 0; step < spec_.iterations; ++step) {
        partial_.assign(static_cast<std::size_t>(n_), 0.0);
        add_center_distances(rows, out, partial_);
        totals.total(partial_);
        clip_step(rows, partial_, spec_.tau, out);
      }
      return;
    case AggregatorKind::krum:
    case AggregatorKind::multikrum:
    case AggregatorKind::bulyan: break;
  }
  partial_.assign(pair_count(n_), 0.0);
  add_pair_distances(rows, partial_);
  totals.total(partial_);
  if (spec_.kind == AggregatorKind::krum) {
    chosen_.assign(1, krum_select(partial_, n_, spec_.f, scratch_));
    coordinate_mean(rows, chosen_, out);  // the mean of one row: the row itself, exactly
  } else if (spec_.kind == AggregatorKind::multikrum) {
    multikrum_select(partial_, n_, spec_.f, spec_.m, chosen_, scratch_);
    coordinate_mean(rows, chosen_, out);
  } else {
    bulyan_select(partial_, n_, spec_.f, chosen_, scratch_);
    coordinate_bulyan(rows, chosen_, n_ - 4 * spec_.f, out, column_);
  }
}

}  // namespace gradsync
