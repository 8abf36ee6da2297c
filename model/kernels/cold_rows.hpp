#pragma once
// Rows for timing the widening gather as a training step runs it: a batch of random rows of a pool the size of a
// training set, a new batch at every call, so that the rows come from memory as a real batch's do. Timed on one batch
// read again and again, the rows would sit in cache, and the plan would charge the widening too little: in a step the
// gather is the batch's first reader and takes its misses while it converts, where the byte kernels' forward product
// asks for the rows ahead and computes meanwhile (bench_compute's step anatomy shows the gap).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gradsync {

class ColdRows {
 public:
  // Batches of `examples` rows of `features` bytes from a pool of about kPoolBytes (at least one batch). Allocates
  // once.
  ColdRows(std::size_t examples, std::size_t features);
  // The next batch: `examples` row pointers, valid while this object lives.
  std::span<const std::uint8_t* const> next() {
    const std::span<const std::uint8_t* const> batch(rows_.data() + at_ * examples_, examples_);
    at_ = (at_ + 1) % batches_;
    return batch;
  }

  // Above MNIST's training set (47 MB) and above the L3 of the CPUs gradsync is measured on (32 MiB).
  static constexpr std::size_t kPoolBytes = std::size_t{64} << 20;

 private:
  std::size_t examples_, batches_ = 1, at_ = 0;
  std::vector<std::uint8_t> pool_;
  std::vector<const std::uint8_t*> rows_;  // the pool's rows in a random order, batches_ * examples_ of them
};

}  // namespace gradsync
