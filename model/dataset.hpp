#pragma once
// Labelled image data in the layout the model consumes: one row of normalized float32 pixels per example.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/read_only_bytes.hpp"

namespace gradsync {

// Pixels stay bytes in memory (a quarter of the float size: the random-row batch gather is memory-bound) and
// become normalized float32, pixel / 255, as a batch is gathered.
struct Dataset {
  ReadOnlyBytes pixels;              // rows x features, row-major
  std::vector<std::uint8_t> labels;  // rows entries, each < classes
  std::size_t rows = 0;
  std::size_t features = 0;
  int classes = 10;
};

inline constexpr float kPixelScale = 1.0f / 255.0f;

// A batch as `rows` (size x features, row-major floats) and `row_bytes` (where each example's bytes are in the
// dataset): BLIS's GEMMs read the rows (the forward one transposed, the input layer's weight gradient as they
// are), the byte kernels (model/kernels/byte_gemm.hpp) the bytes. `next_row_bytes` holds the following batch's, when
// the caller has announced it (prefetch_examples), for the byte kernels to request ahead. Sized once for
// max_size. The pointers point into the Dataset gathered from, which must outlive their use.
struct Batch {
  Batch() = default;
  Batch(std::size_t max_size, std::size_t feature_count)
      : rows(max_size * feature_count), row_bytes(max_size), next_row_bytes(max_size), labels(max_size),
        features(feature_count) {}
  std::vector<float> rows;
  std::vector<const std::uint8_t*> row_bytes, next_row_bytes;
  std::vector<std::uint8_t> labels;
  std::size_t size = 0, next_size = 0;
  std::size_t features = 0;
  bool has_rows = false;  // whether the last gather converted `rows` (else only row_bytes and labels are current)
  std::size_t max_size() const { return labels.size(); }
  std::span<const std::uint8_t* const> next_rows() const { return {next_row_bytes.data(), next_size}; }
};

// One example's `features` bytes as float pixels (dst[i] = src[i] * kPixelScale): what a gather writes for each
// row a BLIS product reads. Inline so that the kernel plan times exactly this loop (model/kernels/plan_timing.cpp).
__attribute__((always_inline)) inline void widen_row(const std::uint8_t* __restrict src, std::size_t features,
                                                     float* __restrict dst) {
  for (std::size_t i = 0; i < features; ++i) dst[i] = static_cast<float>(src[i]) * kPixelScale;
}

// Gathers the examples `indices` of `data` into `out`: labels and row_bytes always, the float rows only if
// `float_rows` (a model whose input layer runs on the byte kernels does not read them: Mlp::reads_float_rows).
// Requires indices.size() <= out.max_size(), every index < data.rows and out.features == data.features (the
// trainer's permutations guarantee them; unchecked, as this runs every step). Allocates nothing.
void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices, Batch& out, bool float_rows = true);

// Asks the CPU to load every cache line of the `bytes` bytes at `row` (a hint: nothing is read or checked). Steps
// of a line from `row`, plus its last byte, touch every line the bytes span. Keep this form: GCC 12 silently
// dropped every prefetch of two other forms (lines rounded down as integers; an early return for 0 bytes followed
// by `row + bytes - 1`), which only the step's time showed; after a change, look for prefetcht0 in the object
// code of gather_batch.
inline void request_bytes(const std::uint8_t* row, std::size_t bytes) {
  constexpr std::size_t kCacheLine = 64;
  for (std::size_t offset = 0; offset < bytes; offset += kCacheLine) __builtin_prefetch(row + offset);
  if (bytes > 0) __builtin_prefetch(row + (bytes - 1));
}

// How many examples ahead of the one it reads gather_batch (and the byte kernels' forward product) asks the CPU to
// load: enough random rows in flight to cover memory latency, few enough not to evict the rows still to read.
inline constexpr std::size_t kGatherLookahead = 6;

// Announces the batch that follows `current` (call it after gathering `current`, with the next batch's indices):
// asks the CPU for the next batch's first kGatherLookahead rows now, so that the next gather does not start on a
// stall (it requests the rest itself, a few rows ahead: prefetching the whole batch here made the step slower in
// bench_batch_layout), and records where all its rows are in current.next_row_bytes, from which the byte kernels
// request them while they compute on `current`. Requires indices.size() <= current.max_size() and every index <
// data.rows (as for gather_batch).
void prefetch_examples(const Dataset& data, std::span<const std::uint32_t> indices, Batch& current);

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Where a loaded dataset's pixels live. `copy`: memory of this process's own, asked for in huge pages (batches
// read random rows all over it). `shared_mapping`: a read-only shared mapping of each raw IDX file, one copy in
// the page cache for every rank on the host; the default of a simulation build, where a thousand simulated ranks
// share one process. A gzip-compressed file is always inflated into a copy.
enum class DataStorage { copy, shared_mapping };
#ifdef GRADSYNC_SIMULATED
inline constexpr DataStorage kDefaultDataStorage = DataStorage::shared_mapping;
#else
inline constexpr DataStorage kDefaultDataStorage = DataStorage::copy;
#endif

// Loads the four standard IDX files from `dir`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each raw or
// with a `.gz` suffix. Validates every file (see read_idx), that image and label counts agree, that train and
// test images have the same shape, and that every label is < 10. Throws DataError naming the file.
TrainTest load_idx_dataset(const std::string& dir, DataStorage storage = kDefaultDataStorage);

// Builds a Dataset from already-parsed IDX arrays; `source` names them in errors. Throws DataError unless
// pixels.size() == dims product and labels.size() == label count (read_idx guarantees both).
// Mapped pixels are kept as they are; any others are copied into memory asked for in huge pages.
Dataset make_dataset(const std::vector<std::uint32_t>& image_dims, ReadOnlyBytes pixels,
                     const std::vector<std::uint32_t>& label_dims, const std::vector<std::uint8_t>& labels,
                     const std::string& source);

}  // namespace gradsync
