#pragma once
// The memory-traffic bound of an allreduce on one machine, measured at the same moments as the allreduces it is
// compared with. A ring allreduce of n bytes on P ranks must, per rank, read the peer chunks it adds and its own
// chunks and write the sums during reduce-scatter (3 (P-1)/P n bytes), then read the peer's finished chunks and
// write them into its buffer during all-gather (2 (P-1)/P n): 5 (P-1)/P n bytes, STREAM counting. This
// pseudo-method makes every rank stream exactly that through buffers of its own (an add over (P-1)/P of the
// elements, then a copy of as many), all ranks at once, so the machine's DRAM is as busy as in the allreduce.
// Its time is the least any allreduce could take; a method's time / this time says how far from the bound it is.
// It sums nothing: bench_allreduce labels its rows "membound" and skips their correctness check.
#include <algorithm>
#include <vector>

#include "collectives/allreduce.hpp"

namespace gradsync::bench {

class MemoryTrafficBound final : public Allreduce {
 public:
  // Buffers for up to `max_count` elements, allocated (and touched) here, once.
  MemoryTrafficBound(const Comm& comm, std::size_t max_count)
      : Allreduce(comm, no_check()), sums_(share(max_count), 1.0f), addends_(share(max_count), 2.0f),
        copies_(share(max_count), 3.0f) {}
  std::string_view name() const override { return "membound"; }

 private:
  static AllreduceOptions no_check() {
    AllreduceOptions o;
    o.check_agreement = false;  // a local kernel: there is nothing for the ranks to agree on
    return o;
  }
  std::size_t share(std::size_t count) const {
    return count * static_cast<std::size_t>(comm_.size() - 1) / static_cast<std::size_t>(comm_.size());
  }
  // A bound, not a schedule of messages: start() does the whole reduction at once.
  void begin(std::byte* data, std::size_t count, Dtype type) override {
    reduce(data, count, type);
    stage_ = {};
  }
  bool advance() override { return true; }
  void reduce(std::byte*, std::size_t count, Dtype) override {
    const std::size_t n = std::min(share(count), sums_.size());
    float* __restrict sums = sums_.data();
    const float* __restrict addends = addends_.data();
    for (std::size_t i = 0; i < n; ++i) sums[i] += addends[i];  // reduce-scatter: read 2, write 1
    std::copy_n(copies_.data(), n, addends_.data());            // all-gather: read 1, write 1
  }

  std::vector<float> sums_, addends_, copies_;
};

}  // namespace gradsync::bench
