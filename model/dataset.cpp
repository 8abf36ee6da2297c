#include "model/dataset.hpp"

#include <fmt/format.h>

#include <sys/mman.h>
#include <algorithm>
#include <filesystem>

#include <cstdint>

#include "cpu/isa_dispatch.hpp"
#include "model/idx_reader.hpp"

namespace gradsync {
namespace {

constexpr int kClasses = 10;

std::string find_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  for (const char* suffix : {"", ".gz"}) {
    const fs::path p = fs::path(dir) / (base + suffix);
    if (fs::exists(p)) return p.string();
  }
  throw DataError(
      fmt::format("{}: missing {} (or {}.gz); pass --data DIR with the four MNIST IDX files", dir, base, base));
}

Dataset load_split(const std::string& dir, const std::string& prefix, DataStorage storage) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray images =
      read_idx(images_path, 3, storage == DataStorage::shared_mapping ? IdxStorage::map : IdxStorage::copy);
  const IdxArray labels = read_idx(labels_path, 1);
  return make_dataset(images.dims, images.data, labels.dims, {labels.data.begin(), labels.data.end()},
                      images_path + " / " + labels_path);
}

}  // namespace

namespace {

void prefetch_row(const Dataset& data, std::uint32_t index) {
  request_bytes(&data.pixels[index * data.features], data.features);
}

// Batches read random rows all over the 47 MB of MNIST pixels: with 4 KiB pages nearly every row is a TLB miss.
// Asking for transparent huge pages before the first write (the region is still untouched after reserve())
// makes those 2 MiB pages. Advice only: where THP is off or unavailable nothing changes.
void advise_huge_pages(void* data, std::size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(kHuge - 1);
#if defined(MADV_HUGEPAGE)
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace

Dataset make_dataset(const std::vector<std::uint32_t>& image_dims, ReadOnlyBytes pixels,
                     const std::vector<std::uint32_t>& label_dims, const std::vector<std::uint8_t>& labels,
                     const std::string& source) {
  if (image_dims.size() != 3 || label_dims.size() != 1)
    throw DataError(fmt::format("{}: images need 3 dimensions and labels 1", source));
  if (image_dims[0] != label_dims[0])
    throw DataError(fmt::format("{}: {} images but {} labels", source, image_dims[0], label_dims[0]));
  const std::size_t image_bytes = std::size_t{image_dims[0]} * image_dims[1] * image_dims[2];
  if (pixels.size() != image_bytes || labels.size() != label_dims[0])
    throw DataError(fmt::format("{}: {} pixel bytes and {} labels for {} images of {} x {}", source, pixels.size(),
                                labels.size(), image_dims[0], image_dims[1], image_dims[2]));
  Dataset d;
  d.rows = image_dims[0];
  d.features = std::size_t{image_dims[1]} * image_dims[2];
  d.classes = kClasses;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= kClasses)
      throw DataError(fmt::format("{}: label {} at index {} is out of range 0..{}", source, labels[i], i, kClasses - 1));
  d.labels = labels;
  if (pixels.mapped()) {
    d.pixels = std::move(pixels);
    return d;
  }
  std::vector<std::uint8_t> copy;
  copy.reserve(pixels.size());
  advise_huge_pages(copy.data(), pixels.size());
  copy.assign(pixels.begin(), pixels.end());
  d.pixels = std::move(copy);
  return d;
}

// Only the rows: a contiguous bytes -> float convert per example, which the compiler vectorizes (for the process's
// instruction set: cpu/isa_dispatch.hpp). The forward
// GEMM reads them transposed (BLIS packs op(B) into its own panels whatever the layout, so a second, column
// layout saves BLIS no work), and one layout is half the floats of two: at batch 256 two layouts no longer fit
// the core's L2 next to the weights. Each example's bytes are requested kGatherLookahead rows ahead, so that
// several random rows are in flight from memory while one converts (bench_batch_layout times the variants).
void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices, Batch& out, bool float_rows) {
  const std::size_t n = indices.size(), f = data.features;
  out.size = n;
  out.next_size = 0;  // announced again by prefetch_examples, never left over from an earlier batch
  out.has_rows = float_rows;
  for (std::size_t j = 0; j < n; ++j) {
    out.labels[j] = data.labels[indices[j]];
    out.row_bytes[j] = &data.pixels[indices[j] * f];
  }
  if (!float_rows) return;  // the byte kernels request the rows ahead themselves
  on_active_isa([&]() GRADSYNC_INLINE_LOOP {
    for (std::size_t j = 0; j < n; ++j) {
      if (j + kGatherLookahead < n) prefetch_row(data, indices[j + kGatherLookahead]);
      widen_row(out.row_bytes[j], f, out.rows.data() + j * f);
    }
  });
}

void prefetch_examples(const Dataset& data, std::span<const std::uint32_t> indices, Batch& current) {
  for (std::size_t j = 0; j < std::min(indices.size(), kGatherLookahead); ++j) prefetch_row(data, indices[j]);
  for (std::size_t j = 0; j < indices.size(); ++j) current.next_row_bytes[j] = &data.pixels[indices[j] * data.features];
  current.next_size = indices.size();
}

TrainTest load_idx_dataset(const std::string& dir, DataStorage storage) {
  TrainTest tt{load_split(dir, "train", storage), load_split(dir, "t10k", storage)};
  if (tt.train.features != tt.test.features)
    throw DataError(
        fmt::format("{}: train images have {} pixels but test images {}", dir, tt.train.features, tt.test.features));
  return tt;
}

}  // namespace gradsync
