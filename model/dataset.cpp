#include "model/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <sys/mman.h>

#include <cstdint>

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
  throw DataError(fmt::format("{}: missing {} (or {}.gz); pass --data DIR with the four MNIST IDX files", dir, base, base));
}

Dataset load_split(const std::string& dir, const std::string& prefix) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(images_path, 3);
  const IdxArray labels = read_idx(labels_path, 1);
  return make_dataset(images.dims, images.data, labels.dims, labels.data, images_path + " / " + labels_path);
}

}  // namespace

namespace {

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

Dataset make_dataset(const std::vector<std::uint32_t>& image_dims, const std::vector<std::uint8_t>& pixels,
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
  d.pixels.reserve(pixels.size());
  advise_huge_pages(d.pixels.data(), pixels.size());
  d.pixels.assign(pixels.begin(), pixels.end());
  return d;
}

namespace {

constexpr std::size_t kTile = 8;

#if defined(__AVX2__)
// The 8 x 8 tile of pixels of examples src[0..7] at features i0..i0+7: converted and scaled in registers, stored as
// 8 rows of `rows` (row stride f), then transposed in registers and stored as 8 rows of `columns` (row stride n).
// One pass over the bytes: the float rows are never read back.
inline void gather_tile(const std::uint8_t* const* src, std::size_t i0, float* rows, std::size_t f, float* columns,
                        std::size_t n) {
  const __m256 scale = _mm256_set1_ps(kPixelScale);
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[k] + i0));
    r[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), scale);
    _mm256_storeu_ps(rows + k * f, r[k]);
  }
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(columns + k * n, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(columns + (k + 4) * n, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}
constexpr bool kTiledGather = true;
#else
inline void gather_tile(const std::uint8_t* const*, std::size_t, float*, std::size_t, float*, std::size_t) {}
constexpr bool kTiledGather = false;
#endif

}  // namespace

// Both layouts in one pass over the examples' bytes, 8 examples x 8 features at a time (convert, store the rows,
// transpose in registers, store the columns). Writing the rows first and transposing them afterwards cost about
// twice as much (bench_compute), and an element-by-element transpose more than the whole softmax step.
void gather_batch(const Dataset& data, std::span<const std::uint32_t> indices, Batch& out) {
  const std::size_t n = indices.size(), f = data.features;
  out.size = n;
  float* __restrict rows = out.rows.data();
  float* __restrict columns = out.columns.data();
  for (std::size_t j = 0; j < n; ++j) out.labels[j] = data.labels[indices[j]];
  const std::size_t n_tiled = kTiledGather ? n - n % kTile : 0, f_tiled = kTiledGather ? f - f % kTile : 0;
  // Feature blocks outermost: each block fills 8 whole rows of `columns` before moving on, and the examples'
  // rows are each written front to back, so both outputs are written while their lines sit in L1.
  for (std::size_t i0 = 0; i0 < f_tiled; i0 += kTile)
    for (std::size_t j0 = 0; j0 < n_tiled; j0 += kTile) {
      const std::uint8_t* src[kTile];
      for (std::size_t k = 0; k < kTile; ++k) src[k] = &data.pixels[indices[j0 + k] * f];
      gather_tile(src, i0, rows + j0 * f + i0, f, columns + i0 * n + j0, n);
    }
  // Edges: the last n % 8 examples and the last f % 8 features (everything, without AVX2).
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint8_t* src = &data.pixels[indices[j] * f];
    for (std::size_t i = j < n_tiled ? f_tiled : 0; i < f; ++i) {
      const float v = static_cast<float>(src[i]) * kPixelScale;
      rows[j * f + i] = v;
      columns[i * n + j] = v;
    }
  }
}

void prefetch_examples(const Dataset& data, std::span<const std::uint32_t> indices) {
  constexpr std::size_t kCacheLine = 64;
  for (std::uint32_t index : indices) {
    const std::uint8_t* row = &data.pixels[index * data.features];
    for (std::size_t offset = 0; offset < data.features; offset += kCacheLine) __builtin_prefetch(row + offset);
  }
}

TrainTest load_idx_dataset(const std::string& dir) {
  TrainTest tt{load_split(dir, "train"), load_split(dir, "t10k")};
  if (tt.train.features != tt.test.features)
    throw DataError(fmt::format("{}: train images have {} pixels but test images {}", dir, tt.train.features,
                                tt.test.features));
  return tt;
}

}  // namespace gradsync
