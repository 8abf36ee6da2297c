#pragma once
// The rows bench_aggregate times (bench/bench_aggregate.cpp), each a small object the driver knows only through
// this interface: the ring allreduce (the bandwidth to meet) and every robust aggregator of
// collectives/robust/aggregators.def in both forms, segmented ("agg-median") and gather-to-one ("agg-median-gather").
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync::bench {

class AggregateMethod {
 public:
  virtual ~AggregateMethod() = default;
  // What the row's `method` column says.
  virtual const std::string& label() const = 0;
  // Local: `data` becomes this rank's input (the same values on every call, so every timed call aggregates alike).
  virtual void fill(std::span<float> data) const = 0;
  // Collective, every rank with the same data.size(): one aggregation of `data`, in place.
  virtual void run(std::span<float> data) = 0;
  // Collective: fills and runs once, and returns the elements, summed over the ranks, that differ from what the
  // method must give (ring: the exact sum of integer inputs; an aggregator: the other form's result on the same
  // inputs, which the unit tests hold against a float64 reference). `data` as for run().
  virtual long count_wrong(std::span<float> data) = 0;
};

// Builds one method on a communicator: collective over it (every rank builds the same methods in the same order).
using AggregateMethodMaker = std::function<std::unique_ptr<AggregateMethod>(const Comm&)>;

// The rows asked for: "ring" (if `with_ring`) first, then for each aggregator of `aggregators` (comma-separated
// aggregator texts; a piece that is only a number belongs to the one before it: "multikrum:1,4"), the segmented and
// the gathered form, in the order of `forms` ("segmented", "gathered", comma-separated). `byzantine` is the F (or B)
// an aggregator's text leaves out and the number of ranks, the last ones, whose inputs are outliers. Every rank,
// the same arguments: each row is built once on `comm` here, so that a bad text or a rank count too small for an
// aggregator throws std::invalid_argument (naming it and the numbers) on every rank before anything is timed.
std::vector<AggregateMethodMaker> aggregate_methods(const std::string& aggregators, const std::string& forms,
                                                    int byzantine, bool with_ring, const Comm& comm);

}  // namespace gradsync::bench
