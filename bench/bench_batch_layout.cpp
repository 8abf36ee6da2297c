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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <string>
#include <vector>

#include "bench/flags/bench_batch_layout_flags.hpp"
#include "cpu/isa.hpp"
#include "model/dataset.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/rng.hpp"
#include "trainers/loop/data_source.hpp"

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
  constexpr std::size_t kStep = kTile ? kTile : 1;  // no division by zero where the tile is compiled out
  const std::size_t n_tiled = kTile ? n - n % kStep : 0, f_tiled = kTile ? f - f % kStep : 0;
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

using Flags = bench::BatchLayoutFlags;

// Every output width at every batch size, and the GEMM shapes of all their layouts (for the kernel plan).
std::vector<Case> make_cases(const Flags& f, std::size_t features, std::vector<GemmShape>& shapes) {
  std::vector<Case> cases;
  for (std::size_t out : f.outputs)
    for (std::size_t batch : f.batches) {
      cases.push_back({out, batch, features});
      for (Layout l : {Layout::Both, Layout::Rows, Layout::Columns}) {
        shapes.push_back(cases.back().forward(l));
        shapes.push_back(cases.back().weight_gradient(l));
      }
    }
  return cases;
}

void print_header(const Flags& f, const BlisConfig& blis) {
  fmt::print("bench_batch_layout: real MNIST, 1 core, {} rounds of {:.2f} s per variant; {}\n", f.rounds, f.block_s,
             kernels_summary(blis));
  fmt::print(
      "us per step: gather, prefetch and the input layer's forward and weight-gradient GEMMs (median over\n"
      "rounds); x: the variant's median ratio to 'both' within a round\n");
  fmt::print("{:>4} {:>5}", "out", "batch");
  for (const Variant& v : kVariants) fmt::print(" {:>10}", v.name);
  for (std::size_t v = 1; v < kVariantCount; ++v) fmt::print(" {:>11}", fmt::format("{} x", kVariants[v].name));
  fmt::print("\n");
}

// One case's buffers and its place in the shuffled training set; step() runs one step of a variant on the next
// batch.
class CaseSteps {
 public:
  CaseSteps(const Case& c, const Dataset& train, std::span<const std::uint32_t> perm)
      : c_(c), train_(train), perm_(perm), batch_(c.batch, c.features), rows_(c.batch * c.features),
        columns_(c.batch * c.features), w_(c.out * c.features, 0.01f), z_(c.out * c.batch),
        delta_(c.out * c.batch, 0.001f), dw_(c.out * c.features) {}

  void step(const Variant& v) {
    const auto idx = slice(first_);
    first_ = first_ + 2 * c_.batch > train_.rows ? 0 : first_ + c_.batch;
    if (v.input != Input::Floats)
      step_bytes(v, idx);
    else
      step_floats(v, idx);
  }

 private:
  std::span<const std::uint32_t> slice(std::size_t s) const {
    return std::span<const std::uint32_t>(perm_.data() + s, c_.batch);
  }

  void step_bytes(const Variant& v, std::span<const std::uint32_t> idx) {
    const std::size_t n = c_.batch, f = c_.features;
    gather_batch(train_, idx, batch_, /*float_rows=*/false);
    prefetch_examples(train_, slice(first_), batch_);
    forward_from_bytes(c_.out, n, f, w_.data(), batch_.row_bytes.data(), kPixelScale, z_.data(), n);
    weight_gradient_from_bytes(c_.out, n, f, delta_.data(), n, batch_.row_bytes.data(), kPixelScale, dw_.data(),
                               v.input == Input::BytesNext ? batch_.next_rows() : std::span<const std::uint8_t* const>{});
  }

  void step_floats(const Variant& v, std::span<const std::uint32_t> idx) {
    const std::size_t n = c_.batch, f = c_.features;
    if (v.model) {
      gather_batch(train_, idx, batch_);
      prefetch_examples(train_, slice(first_), batch_);
    } else {
      if (v.layout == Layout::Rows)
        gather_rows(train_, idx, rows_.data());
      else
        gather_tiled(train_, idx, v.layout == Layout::Both ? rows_.data() : nullptr, columns_.data());
      prefetch_batch(train_, slice(first_));
    }
    const float* x_rows = v.model ? batch_.rows.data() : rows_.data();
    const float* x_cols = columns_.data();
    const GemmShape fw = c_.forward(v.layout), wg = c_.weight_gradient(v.layout);
    if (v.layout == Layout::Rows)
      gemm(Op::N, Op::T, c_.out, n, f, 1.0f, w_.data(), f, x_rows, f, 1.0f, z_.data(), n, planned_context(fw));
    else
      gemm(Op::N, Op::N, c_.out, n, f, 1.0f, w_.data(), f, x_cols, n, 1.0f, z_.data(), n, planned_context(fw));
    if (v.layout == Layout::Columns)
      gemm(Op::N, Op::T, c_.out, f, n, 1.0f, delta_.data(), n, x_cols, n, 0.0f, dw_.data(), f, planned_context(wg));
    else
      gemm(Op::N, Op::N, c_.out, f, n, 1.0f, delta_.data(), n, x_rows, f, 0.0f, dw_.data(), f, planned_context(wg));
  }

  const Case& c_;
  const Dataset& train_;
  std::span<const std::uint32_t> perm_;
  Batch batch_;
  std::vector<float> rows_, columns_, w_, z_, delta_, dw_;
  std::size_t first_ = 0;
};

// Per variant: its time per step in each round, and its ratio to 'both' in the same round.
struct Timings {
  std::vector<double> us[kVariantCount], ratio[kVariantCount];
};

// The byte kernels handle narrow input layers only; the others print as n/a.
bool runs(const Variant& v, const Case& c) { return v.input == Input::Floats || c.out <= kMaxByteGemmOutputs; }

// Every variant that runs on `c`, warmed up, then timed interleaved for --rounds rounds.
Timings time_case(const Flags& f, const Case& c, CaseSteps& steps) {
  Timings t;
  for (const Variant& v : kVariants)
    for (int i = 0; runs(v, c) && i < 20; ++i) steps.step(v);
  for (int r = 0; r < f.rounds; ++r) {
    double round_us[kVariantCount] = {};
    for (std::size_t i = 0; i < kVariantCount; ++i) {
      const std::size_t v = (i + static_cast<std::size_t>(r)) % kVariantCount;  // rotate who goes first
      if (!runs(kVariants[v], c)) continue;
      long count = 0;
      const double start = now_s();
      double elapsed = 0;
      do {
        for (int k = 0; k < 10; ++k) steps.step(kVariants[v]);
        count += 10;
      } while ((elapsed = now_s() - start) < f.block_s);
      round_us[v] = 1e6 * elapsed / static_cast<double>(count);
      t.us[v].push_back(round_us[v]);
    }
    for (std::size_t v = 1; v < kVariantCount; ++v)
      if (runs(kVariants[v], c)) t.ratio[v].push_back(round_us[v] / round_us[0]);
  }
  return t;
}

void print_case(const Case& c, const Timings& t) {
  fmt::print("{:>4} {:>5}", c.out, c.batch);
  for (std::size_t v = 0; v < kVariantCount; ++v)
    fmt::print(" {:>10}", runs(kVariants[v], c) ? fmt::format("{:.2f}", median(t.us[v])) : "n/a");
  for (std::size_t v = 1; v < kVariantCount; ++v)
    fmt::print(" {:>11}", runs(kVariants[v], c) ? fmt::format("{:.3f}x", median(t.ratio[v])) : "n/a");
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (const std::optional<int> done = bench::parse_batch_layout_flags(argc, argv, f)) return *done;
  refuse_bad_isa_request("bench_batch_layout");
  const BlisConfig blis = configure_blis(1);
  TrainConfig data_config;
  data_config.data_dir = f.data_dir;
  const std::optional<TrainTest> data = load_training_data_alone(data_config, "bench_batch_layout");
  if (!data) return 2;  // bad --data, said in one line (docs/reference.md)
  const Dataset& train = data->train;
  std::vector<GemmShape> shapes;
  const std::vector<Case> cases = make_cases(f, train.features, shapes);
  const KernelPlan plan = make_kernel_plan(shapes, blis);
  install_kernel_plan(plan, blis);
  print_header(f, blis);
  std::vector<std::uint32_t> perm(train.rows);
  shuffled_indices(perm, 1, 0);
  for (const Case& c : cases) {
    CaseSteps steps(c, train, perm);
    print_case(c, time_case(f, c, steps));
  }
  return 0;
}
