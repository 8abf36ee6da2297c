#include "collectives/robust/robust_aggregation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "collectives/allreduce_method.hpp"
#include "collectives/ring_allreduce.hpp"
#include "collectives/robust/segment_aggregator.hpp"
#include "collectives/robust/segment_scatter.hpp"

namespace gradsync {
namespace {

// The segmented form's totals: one MPI_Allreduce of the partial sums (none for an empty span, which every rank has
// alike).
class AllreducedTotals final : public Totals {
 public:
  explicit AllreducedTotals(const Comm& comm) : comm_(comm) {}
  void total(std::span<double> partial) override {
    if (!partial.empty()) comm_.sum_in_place(partial);
  }

 private:
  const Comm& comm_;
};

// The gathered form's root holds the whole vectors: its partial sums are already the totals.
class WholeTotals final : public Totals {
 public:
  void total(std::span<double>) override {}
};

AllreduceOptions unchecked(AllreduceOptions o) {
  o.check_agreement = false;  // the scatter before it checked the count
  return o;
}

class SegmentedAggregation final : public RobustAggregation {
 public:
  SegmentedAggregation(const Comm& comm, const AggregatorSpec& spec)
      : RobustAggregation(comm, spec), scatter_(comm),
        gather_(comm, resolve_transport(comm, unchecked({}), true), RingPhases::all_gather),
        aggregator_(spec, comm.size()), totals_(comm_) {}

  void run(std::span<float> mine) override {
    const std::size_t count = mine.size();
    workspace_.resize(scatter_.workspace_count(count));
    std::copy(mine.begin(), mine.end(), workspace_.begin());
    scatter_.run_on(workspace_.data(), count);
    const ElementRange own = scatter_.owned(count, comm_.rank());
    const SegmentRows rows{workspace_.data() + count, scatter_.segment_stride(count), own.size(), comm_.size()};
    const std::span<float> out = mine.subspan(own.begin, own.size());
    if (spec_.kind == AggregatorKind::cclip) {
      const std::span<const float> ref = reference_for(count);
      std::copy(ref.begin() + static_cast<std::ptrdiff_t>(own.begin), ref.begin() + static_cast<std::ptrdiff_t>(own.end),
                out.begin());
    }
    aggregator_.run(rows, out, totals_);
    gather_.run(mine);
    if (spec_.kind == AggregatorKind::cclip) keep_reference(mine);
  }

 private:
  SegmentScatter scatter_;
  RingAllreduce gather_;
  SegmentAggregator aggregator_;
  AllreducedTotals totals_;
  std::vector<float> workspace_;
};

class GatheredAggregation final : public RobustAggregation {
 public:
  GatheredAggregation(const Comm& comm, const AggregatorSpec& spec)
      : RobustAggregation(comm, spec), tag_(comm.reserve_tags(1)), aggregator_(spec, comm.size()) {
    if (comm_.rank() == 0) requests_.resize(static_cast<std::size_t>(comm_.size()), MPI_REQUEST_NULL);
  }

  void run(std::span<float> mine) override {
    const std::size_t count = mine.size();
    const auto [least, most] = comm_.min_max(count);
    if (least != most)
      throw std::invalid_argument(
          fmt::format("gather-to-one aggregation ({}): ranks passed vectors of {} to {} values; every rank must pass "
                      "the same length",
                      spec_.text, least, most));
    const int p = comm_.size();
    if (comm_.rank() == 0) {
      whole_.resize(static_cast<std::size_t>(p) * count);
      std::copy(mine.begin(), mine.end(), whole_.begin());
      for (int r = 1; r < p; ++r)
        requests_[static_cast<std::size_t>(r)] =
            comm_.irecv(std::span<float>(whole_.data() + static_cast<std::size_t>(r) * count, count), r, tag_);
      comm_.wait_all(requests_, "gather-to-one aggregation: the root waits for every rank's whole vector");
      if (spec_.kind == AggregatorKind::cclip) {
        const std::span<const float> ref = reference_for(count);
        std::copy(ref.begin(), ref.end(), mine.begin());
      }
      WholeTotals totals;
      aggregator_.run({whole_.data(), count, count, p}, mine, totals);
    } else {
      MPI_Request request = comm_.isend(std::span<const float>(mine), 0, tag_);
      comm_.wait(request, "gather-to-one aggregation: sending this rank's whole vector to the root");
    }
    comm_.broadcast(mine, 0);
    if (spec_.kind == AggregatorKind::cclip) keep_reference(mine);
  }

 private:
  int tag_;
  SegmentAggregator aggregator_;
  std::vector<float> whole_;  // the root's: every rank's vector, rank r's at r * count
  std::vector<MPI_Request> requests_;
};

}  // namespace

std::span<const float> RobustAggregation::reference_for(std::size_t count) {
  if (reference_.size() != count) reference_.assign(count, 0.0f);
  return reference_;
}

void RobustAggregation::keep_reference(std::span<const float> aggregate) {
  reference_.assign(aggregate.begin(), aggregate.end());
}

std::unique_ptr<RobustAggregation> make_robust_aggregation(const Comm& comm, std::string_view spec_text, int byzantine,
                                                           AggregationForm form) {
  const AggregatorSpec spec = resolved_for(parse_aggregator(spec_text, byzantine), comm.size());
  if (form == AggregationForm::gathered) return std::make_unique<GatheredAggregation>(comm, spec);
  return std::make_unique<SegmentedAggregation>(comm, spec);
}

}  // namespace gradsync
