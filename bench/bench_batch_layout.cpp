// bench_batch_layout: what the batch's path into the input layer costs. A step gathers the sampled MNIST rows
// (bytes -> float), asks for the next step's rows, and the input layer's two GEMMs read the batch: the forward
// product Z = W X and the weight gradient dW = delta X^T. Variants, timed interleaved on real batches, one core:
//   both       the rows (batch x features) and the columns (features x batch), written in one tiled pass, each
//              GEMM reading the layout it wants untransposed; the whole next batch prefetched (the model before)
//   columns    the columns only (the tiled transpose); the weight gradient reads them transposed
//   rows       the rows only (a contiguous convert); the forward GEMM reads them transposed (BLIS packs op(B)
//              into its panels either way); the whole next batch prefetched
//   rows+ahead the model's gather_batch and prefetch_examples: rows only, each row requested kGatherLookahead
//              rows before it is converted, and only the next batch's first rows prefetched a step ahead
//   bytes      no conversion: the byte kernels (model/kernels/byte_gemm.hpp) read each example's bytes in the dataset,
//              the forward product requesting rows kGatherLookahead examples ahead (input layers of <= 12 outputs)
//   bytes+next the same, and the weight gradient requests the next batch's rows while it computes (the model)
// Each runs the trainer's order (gather, prefetch, GEMMs) with the GEMMs on the kernel plan's set for their shapes.
//   build/bin/bench_batch_layout --batches 32 256 --outputs 10 128
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <string>
#include <vector>

#include "model/dataset.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/rng.hpp"

namespace {

using namespace gradsync;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Which layout a variant writes; the GEMMs follow from it.
enum class Layout { Both, Rows, Columns };

// The 8 x 8 tile of pixels of examples src[0..7] at features i0..i0+7, converted and scaled in registers; stored as
// 8 rows of `rows` (row stride f) if `rows` is not null, then transposed in registers and stored as 8 rows of
// `columns` (row stride n). The model gathered both layouts this way before it kept the rows alone.
#if defined(__AVX2__)
void gather_tile(const std::uint8_t* const* src, std::size_t i0, float* rows, std::size_t f, float* columns,
                 std::size_t n) {
  const __m256 scale = _mm256_set1_ps(kPixelScale);
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[k] + i0));
    r[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), scale);
    if (rows) _mm256_storeu_ps(rows + k * f, r[k]);
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
constexpr std::size_t kTile = 8;
#else
void gather_tile(const std::uint8_t* const*, std::size_t, float*, std::size_t, float*, std::size_t) {}
constexpr std::size_t kTile = 0;
#endif

// The columns (features x batch), and the rows too if `rows` is not null, in one pass over the examples' bytes,
// 8 examples x 8 features at a time, feature blocks outermost.
void gather_tiled(const Dataset& data, std::span<const std::uint32_t> indices, float* rows, float* columns) {
  const std::size_t n = indices.size(), f = data.features;
  const std::size_t n_tiled = kTile ? n - n % kTile : 0, f_tiled = kTile ? f - f % kTile : 0;
  for (std::size_t i0 = 0; i0 < f_tiled; i0 += kTile)
    for (std::size_t j0 = 0; j0 < n_tiled; j0 += kTile) {
      const std::uint8_t* src[8];
      for (std::size_t k = 0; k < kTile; ++k) src[k] = &data.pixels[indices[j0 + k] * f];
      gather_tile(src, i0, rows ? rows + j0 * f + i0 : nullptr, f, columns + i0 * n + j0, n);
    }
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = j < n_tiled ? f_tiled : 0; i < f; ++i) {
      const float v = static_cast<float>(data.pixels[indices[j] * f + i]) * kPixelScale;
      if (rows) rows[j * f + i] = v;
      columns[i * n + j] = v;
    }
}

// The rows alone without lookahead, and the whole next batch requested a step ahead (the model's first rows-only
// gather and its prefetch before kGatherLookahead).
void gather_rows(const Dataset& data, std::span<const std::uint32_t> indices, float* rows) {
  const std::size_t f = data.features;
  for (std::size_t j = 0; j < indices.size(); ++j) widen_row(&data.pixels[indices[j] * f], f, rows + j * f);
}

void prefetch_batch(const Dataset& data, std::span<const std::uint32_t> indices) {
  constexpr std::size_t kCacheLine = 64;
  for (std::uint32_t index : indices)
    for (std::size_t offset = 0; offset < data.features; offset += kCacheLine)
      __builtin_prefetch(&data.pixels[index * data.features + offset]);
}

// What the input layer's products read: the float batch (BLIS) or the dataset's bytes (the byte kernels), the
// latter with or without the next batch requested during the weight gradient.
enum class Input { Floats, Bytes, BytesNext };

struct Variant {
  const char* name;
  Layout layout;
  bool model;  // gather_batch and prefetch_examples, as the trainer calls them
  Input input = Input::Floats;
};
constexpr Variant kVariants[] = {{"both", Layout::Both, false},
                                 {"columns", Layout::Columns, false},
                                 {"rows", Layout::Rows, false},
                                 {"rows+ahead", Layout::Rows, true},
                                 {"bytes", Layout::Rows, true, Input::Bytes},
                                 {"bytes+next", Layout::Rows, true, Input::BytesNext}};
constexpr std::size_t kVariantCount = std::size(kVariants);

struct Case {
  std::size_t out, batch, features;
  GemmShape forward(Layout l) const { return {false, l == Layout::Rows, out, batch, features}; }
  GemmShape weight_gradient(Layout l) const { return {false, l == Layout::Columns, out, features, batch}; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_batch_layout: the input layer's gather and GEMMs for each layout of the batch, and on its bytes"};
  std::string data_dir = "data/mnist";
  std::vector<std::size_t> batches = {32, 256}, outputs = {10, 128};
  int rounds = 15;
  double block_s = 0.05;
  app.add_option("--data", data_dir, "MNIST directory")->capture_default_str();
  app.add_option("--batches", batches, "batch sizes")->capture_default_str();
  app.add_option("--outputs", outputs, "input layer widths (10: softmax regression, 128: MLP-128)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "rounds; each times every variant once, in rotating order")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--block-seconds", block_s, "time per variant per round")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const BlisConfig blis = configure_blis(1);
  const Dataset train = load_idx_dataset(data_dir).train;

  std::vector<Case> cases;
  std::vector<GemmShape> shapes;
  for (std::size_t out : outputs)
    for (std::size_t batch : batches) {
      cases.push_back({out, batch, train.features});
      for (Layout l : {Layout::Both, Layout::Rows, Layout::Columns}) {
        shapes.push_back(cases.back().forward(l));
        shapes.push_back(cases.back().weight_gradient(l));
      }
    }
  const KernelPlan plan = make_kernel_plan(shapes, blis);
  install_kernel_plan(plan, blis);
  fmt::print("bench_batch_layout: real MNIST, 1 core, {} rounds of {:.2f} s per variant; {}\n", rounds, block_s,
             kernels_summary(blis));
  fmt::print(
      "us per step: gather, prefetch and the input layer's forward and weight-gradient GEMMs (median over\n"
      "rounds); x: the variant's median ratio to 'both' within a round\n");
  fmt::print("{:>4} {:>5}", "out", "batch");
  for (const Variant& v : kVariants) fmt::print(" {:>10}", v.name);
  for (std::size_t v = 1; v < kVariantCount; ++v) fmt::print(" {:>11}", fmt::format("{} x", kVariants[v].name));
  fmt::print("\n");

  std::vector<std::uint32_t> perm(train.rows);
  shuffled_indices(perm, 1, 0);
  for (const Case& c : cases) {
    const std::size_t n = c.batch, f = c.features;
    Batch batch(n, f);
    std::vector<float> rows(n * f), columns(n * f), w(c.out * f, 0.01f), z(c.out * n), delta(c.out * n, 0.001f),
        dw(c.out * f);
    std::size_t first = 0;
    const auto slice = [&](std::size_t s) { return std::span<const std::uint32_t>(perm.data() + s, n); };
    const auto step = [&](const Variant& v) {
      const auto idx = slice(first);
      first = first + 2 * n > train.rows ? 0 : first + n;
      if (v.input != Input::Floats) {
        gather_batch(train, idx, batch, /*float_rows=*/false);
        prefetch_examples(train, slice(first), batch);
        forward_from_bytes(c.out, n, f, w.data(), batch.row_bytes.data(), kPixelScale, z.data(), n);
        weight_gradient_from_bytes(
            c.out, n, f, delta.data(), n, batch.row_bytes.data(), kPixelScale, dw.data(),
            v.input == Input::BytesNext ? batch.next_rows() : std::span<const std::uint8_t* const>{});
        return;
      }
      if (v.model) {
        gather_batch(train, idx, batch);
        prefetch_examples(train, slice(first), batch);
      } else {
        if (v.layout == Layout::Rows)
          gather_rows(train, idx, rows.data());
        else
          gather_tiled(train, idx, v.layout == Layout::Both ? rows.data() : nullptr, columns.data());
        prefetch_batch(train, slice(first));
      }
      const float* x_rows = v.model ? batch.rows.data() : rows.data();
      const float* x_cols = columns.data();
      const GemmShape fw = c.forward(v.layout), wg = c.weight_gradient(v.layout);
      if (v.layout == Layout::Rows)
        gemm(Op::N, Op::T, c.out, n, f, 1.0f, w.data(), f, x_rows, f, 1.0f, z.data(), n, planned_context(fw));
      else
        gemm(Op::N, Op::N, c.out, n, f, 1.0f, w.data(), f, x_cols, n, 1.0f, z.data(), n, planned_context(fw));
      if (v.layout == Layout::Columns)
        gemm(Op::N, Op::T, c.out, f, n, 1.0f, delta.data(), n, x_cols, n, 0.0f, dw.data(), f, planned_context(wg));
      else
        gemm(Op::N, Op::N, c.out, f, n, 1.0f, delta.data(), n, x_rows, f, 0.0f, dw.data(), f, planned_context(wg));
    };
    std::vector<double> us[kVariantCount], ratio[kVariantCount];
    // The byte kernels handle narrow input layers only; the others print as n/a.
    const auto runs = [&](const Variant& v) { return v.input == Input::Floats || c.out <= kMaxByteGemmOutputs; };
    for (const Variant& v : kVariants)
      for (int i = 0; runs(v) && i < 20; ++i) step(v);
    for (int r = 0; r < rounds; ++r) {
      double round_us[kVariantCount] = {};
      for (std::size_t i = 0; i < kVariantCount; ++i) {
        const std::size_t v = (i + static_cast<std::size_t>(r)) % kVariantCount;  // rotate who goes first
        if (!runs(kVariants[v])) continue;
        long steps = 0;
        const double start = now_s();
        double t = 0;
        do {
          for (int k = 0; k < 10; ++k) step(kVariants[v]);
          steps += 10;
        } while ((t = now_s() - start) < block_s);
        round_us[v] = 1e6 * t / static_cast<double>(steps);
        us[v].push_back(round_us[v]);
      }
      for (std::size_t v = 1; v < kVariantCount; ++v)
        if (runs(kVariants[v])) ratio[v].push_back(round_us[v] / round_us[0]);
    }
    fmt::print("{:>4} {:>5}", c.out, n);
    for (std::size_t v = 0; v < kVariantCount; ++v)
      fmt::print(" {:>10}", runs(kVariants[v]) ? fmt::format("{:.2f}", median(us[v])) : "n/a");
    for (std::size_t v = 1; v < kVariantCount; ++v)
      fmt::print(" {:>11}", runs(kVariants[v]) ? fmt::format("{:.3f}x", median(ratio[v])) : "n/a");
    fmt::print("\n");
  }
  return 0;
}
