// The byte kernels: the input layer's two products read straight from the dataset's bytes compute what the float
// path computes, a plan gives them only the shapes they handle, and a model whose input layer runs on them trains
// as on BLIS without the batch's float rows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/kernels/plan_timing.hpp"
#include "model/mlp.hpp"
#include "test_support.hpp"

using namespace gradsync;

namespace {

float pseudo(std::size_t i, std::size_t salt) {
  return static_cast<float>((i * 7919 + salt * 104729) % 193) / 193.0f - 0.5f;
}

// n examples of f bytes, each in its own allocation of exactly f bytes (a read past a row's end is a sanitizer error).
struct ByteRows {
  std::vector<std::unique_ptr<std::uint8_t[]>> storage;
  std::vector<const std::uint8_t*> rows;
  ByteRows(std::size_t n, std::size_t f) {
    for (std::size_t j = 0; j < n; ++j) {
      storage.emplace_back(new std::uint8_t[f]);
      for (std::size_t k = 0; k < f; ++k) storage.back()[k] = static_cast<std::uint8_t>((j * 131 + k * 17 + j * k) % 256);
      rows.push_back(storage.back().get());
    }
  }
};

// A reference sum in double of `terms` values term(0), term(1), ..., with the sum of their magnitudes, the scale
// that a float kernel's rounding error is measured against.
struct ReferenceSum {
  double sum = 0, magnitude = 0;
};
template <class Term>
ReferenceSum reference_sum(std::size_t terms, Term term) {
  ReferenceSum out;
  for (std::size_t i = 0; i < terms; ++i) {
    const double t = term(i);
    out.sum += t;
    out.magnitude += std::fabs(t);
  }
  return out;
}

}  // namespace

TEST_CASE("the byte kernels compute the input layer's products to float accuracy for every output count and size") {
  MESSAGE("byte kernels: " << byte_gemm_kernels());
  const float scale = kPixelScale;
  for (std::size_t outputs = 1; outputs <= kMaxByteGemmOutputs; ++outputs)
    for (std::size_t n : {1, 2, 3, 33})
      for (std::size_t f : {1, 15, 16, 17, 31, 32, 33, 784}) {
        CAPTURE(outputs);
        CAPTURE(n);
        CAPTURE(f);
        const ByteRows x(n, f);
        std::vector<float> w(outputs * f), delta(outputs * n);
        for (std::size_t i = 0; i < w.size(); ++i) w[i] = pseudo(i, 1);
        for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = pseudo(i, 2);

        // Forward: z starts as the bias and is added to.
        std::vector<float> z(outputs * n);
        for (std::size_t i = 0; i < z.size(); ++i) z[i] = pseudo(i, 3);
        const std::vector<float> bias = z;
        forward_from_bytes(outputs, n, f, w.data(), x.rows.data(), scale, z.data(), n);
        double worst = 0;
        for (std::size_t c = 0; c < outputs; ++c)
          for (std::size_t j = 0; j < n; ++j) {
            const ReferenceSum r =
                reference_sum(f, [&](std::size_t k) { return double(w[c * f + k]) * x.rows[j][k] * scale; });
            const double want = bias[c * n + j] + r.sum;
            worst = std::max(worst, std::fabs(z[c * n + j] - want) / (std::fabs(bias[c * n + j]) + r.magnitude + 1e-30));
          }
        CHECK(worst < 1e-6);

        // Weight gradient: dw is overwritten, not added to.
        std::vector<float> dw(outputs * f, std::numeric_limits<float>::quiet_NaN());
        weight_gradient_from_bytes(outputs, n, f, delta.data(), n, x.rows.data(), scale, dw.data());
        worst = 0;
        for (std::size_t c = 0; c < outputs; ++c)
          for (std::size_t k = 0; k < f; ++k) {
            const ReferenceSum r =
                reference_sum(n, [&](std::size_t j) { return double(delta[c * n + j]) * x.rows[j][k] * scale; });
            const double error = std::fabs(dw[c * f + k] - r.sum);
            worst = std::max(worst, std::isnan(error) ? 1.0 : error / (r.magnitude + 1e-30));
          }
        CHECK(worst < 1e-6);

        // Requesting the next batch's rows meanwhile (fewer, as many, or more than n of them) changes nothing.
        const ByteRows next(n + 1, f);
        for (std::size_t upcoming : {std::size_t{1}, n, n + 1}) {
          std::vector<float> again(outputs * f);
          weight_gradient_from_bytes(outputs, n, f, delta.data(), n, x.rows.data(), scale, again.data(),
                                     std::span(next.rows).first(upcoming));
          CHECK(again == dw);
        }
      }
}

TEST_CASE("a kernel plan gives the byte kernels only the input layer's products with few outputs") {
  test::RestorePlan restore;
  const auto parsed = KernelPlan::from_text("ntb 10 32 784 bytes zen3=2e-05 bytes=9e-06\nnnb 10 784 32 zen3\n");
  REQUIRE(parsed);
  const GemmShape forward{false, true, 10, 32, 784, true};
  REQUIRE(parsed->find(forward));
  CHECK(parsed->find(forward)->kernels == "bytes");
  CHECK(parsed->find(forward)->seconds_of("bytes") == doctest::Approx(9e-6));
  CHECK(parsed->find({false, true, 10, 32, 784, false}) == nullptr);  // the mark is part of the shape
  CHECK(KernelPlan::from_text(parsed->to_text())->to_text() == parsed->to_text());
  for (const char* bad :
       {"nt 10 32 784 bytes\n", "ntb 13 32 784 bytes\n", "tnb 10 32 784 bytes\n", "tnb 10 32 784 zen3\n",
        "ttb 10 32 784 zen3\n", "ntx 10 32 784 zen3\n", "nt 10 32 784 zen3 bytes=1e-5\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(KernelPlan::from_text(bad));
  }
  for (const GemmShape& g : {GemmShape{false, true, 10, 32, 784, false}, GemmShape{false, true, 13, 32, 784, true}}) {
    KernelPlan plan;
    plan.gemms.push_back({g, "bytes", {}});
    CHECK_THROWS_AS(install_kernel_plan(plan, configured_blis()), std::invalid_argument);
  }

  if (!byte_gemm_vectorized()) {  // the plain loop computes other bits: never installed, never timed
    KernelPlan plan;
    plan.gemms.push_back({forward, "bytes", {}});
    CHECK_THROWS_AS(install_kernel_plan(plan, configured_blis()), std::invalid_argument);
  }
}

TEST_CASE("a measured plan times the byte kernels on the input layer's products only, and only where vectorized" *
          doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  SKIP_UNLESS(!configured_blis().kernel_sets.empty() && per_call_contexts_available(), test::kNoKernelSet);
  const std::vector<GemmShape> shapes = Mlp({20, 4}).planned_gemms(8);
  const KernelPlan measured =
      measure_kernel_plan(shapes, configured_blis().kernel_sets, configured_blis().arch, /*rounds=*/1);
  for (const PlannedGemm& g : measured.gemms) {
    CAPTURE(g.shape.m);
    CAPTURE(g.shape.n);
    CAPTURE(g.shape.k);
    CHECK((g.seconds_of("bytes") > 0) == (g.shape.batch_operand && byte_gemm_vectorized()));
  }
}

TEST_CASE("softmax regression on the byte kernels needs no float rows and matches the float path" *
          doctest::test_suite("needs_avx2")) {
  test::RestorePlan restore;
  SKIP_UNLESS(byte_gemm_vectorized(),
              "the byte kernels are vectorized for AVX2 and AVX-512 only, and no plan installs the "
              "plain loop");
  const TrainTest data = test::blobs(256);
  const Mlp model({20, 4});
  const std::size_t n = 32;
  std::vector<float> params(model.parameter_count());
  model.init(params, 5);
  Workspace ws(model, n);
  Batch batch(n, 20);
  std::vector<std::uint32_t> rows(n);
  for (std::size_t j = 0; j < n; ++j) rows[j] = static_cast<std::uint32_t>((j * 37) % data.train.rows);

  install_kernel_plan(KernelPlan{}, configured_blis());  // every product on BLIS
  CHECK(model.reads_float_rows(n));
  gather_batch(data.train, rows, batch, model.reads_float_rows(n));
  std::vector<float> want(model.parameter_count()), got(model.parameter_count());
  const float want_loss = model.loss_and_gradient(params, batch, want, ws);
  const Evaluation want_eval = model.evaluate(params, data.test, ws);

  KernelPlan bytes;
  for (const GemmShape& g : model.planned_gemms(n))
    if (g.batch_operand) bytes.gemms.push_back({g, "bytes", {}});
  REQUIRE(bytes.gemms.size() == 3);  // forward and weight gradient at n, forward at the evaluation batch
  install_kernel_plan(bytes, configured_blis());
  CHECK_FALSE(model.reads_float_rows(n));
  gather_batch(data.train, rows, batch, model.reads_float_rows(n));
  CHECK_FALSE(batch.has_rows);
  std::fill(batch.rows.begin(), batch.rows.end(), std::numeric_limits<float>::quiet_NaN());  // must not be read
  const float got_loss = model.loss_and_gradient(params, batch, got, ws);
  CHECK(got_loss == doctest::Approx(want_loss).epsilon(1e-6));
  CHECK(test::relative_difference(got, want) < 1e-6);
  const Evaluation got_eval = model.evaluate(params, data.test, ws);
  CHECK(got_eval.loss == doctest::Approx(want_eval.loss).epsilon(1e-6));
  CHECK(got_eval.accuracy == want_eval.accuracy);

  // With one input product on bytes the other reads the float rows: a batch without them is refused, and one
  // with them computes the same.
  for (std::size_t keep : {0, 1}) {
    CAPTURE(keep);
    KernelPlan one;
    one.gemms.push_back(bytes.gemms[keep]);
    install_kernel_plan(one, configured_blis());
    CHECK(model.reads_float_rows(n));
    gather_batch(data.train, rows, batch, /*float_rows=*/false);
    CHECK_THROWS_AS(model.loss_and_gradient(params, batch, got, ws), std::invalid_argument);
    gather_batch(data.train, rows, batch, model.reads_float_rows(n));
    CHECK(model.loss_and_gradient(params, batch, got, ws) == doctest::Approx(want_loss).epsilon(1e-6));
    CHECK(test::relative_difference(got, want) < 1e-6);
  }
}
