#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "model/synthetic.hpp"
#include "model/vector_exp.hpp"
#include "model/vector_log.hpp"

using namespace gradsync;

namespace {

std::vector<std::uint32_t> all_rows(const Dataset& data) {
  std::vector<std::uint32_t> rows(data.rows);
  for (std::uint32_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return rows;
}

// Central finite differences: compares sampled analytic gradient coordinates with (L(p+h) - L(p-h)) / 2h.
// ReLU is not differentiable at 0; a coordinate whose step moves a hidden unit across that kink shows it as
// disagreeing one-sided differences, and is excluded (and counted) rather than compared.
void check_gradient(const std::vector<std::size_t>& sizes) {
  const Mlp model(sizes);
  const Dataset data = make_blobs(6, sizes.front(), static_cast<int>(sizes.back()), 0.3f, 11);
  std::vector<float> params(model.parameter_count()), grads(model.parameter_count()), scratch(model.parameter_count());
  model.init(params, 3);
  Workspace ws(model, data.rows);
  Batch batch(data.rows, data.features);
  gather_batch(data, all_rows(data), batch);
  const auto loss = [&] { return double(model.loss_and_gradient(params, batch, scratch, ws)); };
  model.loss_and_gradient(params, batch, grads, ws);
  const double at = loss();
  const float h = 3e-3f;
  int checked = 0, bad = 0, kinks = 0;
  for (std::size_t i = 0; i < params.size(); i += 1 + params.size() / 60) {
    const float keep = params[i];
    params[i] = keep + h;
    const double up = loss();
    params[i] = keep - h;
    const double down = loss();
    params[i] = keep;
    const double forward = (up - at) / h, backward = (at - down) / h, numeric = (up - down) / (2 * h);
    if (std::fabs(forward - backward) > 0.05 * std::fabs(numeric) + 1e-3) {
      ++kinks;
      continue;
    }
    ++checked;
    if (std::fabs(numeric - grads[i]) > 1e-3 + 1e-2 * std::fabs(grads[i])) {
      ++bad;
      MESSAGE("coordinate " << i << ": analytic " << grads[i] << ", numeric " << numeric);
    }
  }
  CHECK(checked > 20);
  CHECK(kinks <= checked / 10);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gradients match finite differences: softmax regression") { check_gradient({13, 4}); }

TEST_CASE("gradients match finite differences: MLP with two hidden layers") { check_gradient({13, 9, 7, 4}); }

TEST_CASE("parameters live in one buffer with the expected layout") {
  const Mlp model({784, 128, 10});
  CHECK(model.parameter_count() == 784 * 128 + 128 + 128 * 10 + 10);
  CHECK(model.describe() == "784-128-10");
  std::vector<float> a(model.parameter_count()), b(model.parameter_count());
  model.init(a, 42);
  model.init(b, 42);
  CHECK(a == b);  // deterministic from the seed
  model.init(b, 43);
  CHECK(a != b);
}

TEST_CASE("serial SGD drives the loss down on separable generated data") {
  const Dataset data = make_blobs(512, 20, 4, 0.2f, 5);
  const Mlp model({20, 16, 4});
  std::vector<float> params(model.parameter_count()), grads(model.parameter_count());
  model.init(params, 1);
  Workspace ws(model, 32);
  Batch batch(32, data.features);
  const std::vector<std::uint32_t> rows = all_rows(data);
  Sgd sgd({0.5f, 0.0f, 0.0f}, params.size());
  const double before = model.evaluate(params, data, ws).loss;
  for (int step = 0; step < 200; ++step) {
    const std::size_t first = (static_cast<std::size_t>(step) * 32) % (data.rows - 32);
    gather_batch(data, std::span(rows).subspan(first, 32), batch);
    model.loss_and_gradient(params, batch, grads, ws);
    sgd.step(params, grads);
  }
  const Evaluation after = model.evaluate(params, data, ws);
  CHECK(after.loss < 0.2 * before);
  CHECK(after.accuracy > 0.98);
}

// Odd and vector-sized shapes, so a vectorized convert's main loop and its tail are both checked.
TEST_CASE("a gathered batch holds the picked examples' rows, normalized") {
  struct Shape {
    std::size_t examples, features;
  };
  for (const Shape shape : {Shape{3, 6}, Shape{8, 8}, Shape{19, 21}, Shape{32, 784}}) {
    CAPTURE(shape.examples);
    CAPTURE(shape.features);
    const Dataset data = make_blobs(3 * shape.examples + 5, shape.features, 3, 0.3f, 2);
    Batch batch(shape.examples + 1, data.features);
    std::vector<std::uint32_t> pick(shape.examples);
    for (std::size_t j = 0; j < pick.size(); ++j) pick[j] = static_cast<std::uint32_t>((7 * j + 4) % data.rows);
    gather_batch(data, pick, batch);
    CHECK(batch.size == pick.size());
    std::size_t wrong = 0;
    for (std::size_t j = 0; j < pick.size(); ++j) {
      CHECK(batch.labels[j] == data.labels[pick[j]]);
      for (std::size_t i = 0; i < data.features; ++i)
        wrong += batch.rows[j * data.features + i] != data.pixels[pick[j] * data.features + i] * kPixelScale;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("SGD momentum and weight decay follow their formulas") {
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, 0.25f};
  Sgd sgd({0.1f, 0.9f, 0.01f}, 2);
  sgd.step(p, g, 2.0f);  // v = 2g + wd p; p -= lr v
  CHECK(p[0] == doctest::Approx(1.0f - 0.1f * (1.0f + 0.01f * 1.0f)));
  const float v0 = 1.0f + 0.01f;
  const float p0 = p[0];
  sgd.step(p, g, 2.0f);
  CHECK(p[0] == doctest::Approx(p0 - 0.1f * (0.9f * v0 + 1.0f + 0.01f * p0)));
}

TEST_CASE("shuffles depend only on seed and epoch") {
  std::vector<std::uint32_t> a(1000), b(1000);
  shuffled_indices(a, 7, 3);
  shuffled_indices(b, 7, 3);
  CHECK(a == b);
  shuffled_indices(b, 7, 4);
  CHECK(a != b);
  std::sort(b.begin(), b.end());
  for (std::uint32_t i = 0; i < b.size(); ++i) REQUIRE(b[i] == i);  // a permutation
}

TEST_CASE("buffers of the wrong size are refused with both sizes in the message") {
  const Mlp model({13, 9, 4});
  const Dataset data = make_blobs(8, 13, 4, 0.3f, 1);
  std::vector<float> params(model.parameter_count()), grads(model.parameter_count());
  model.init(params, 1);
  Workspace ws(model, 8);
  Batch batch(8, 13);
  std::vector<std::uint32_t> indices(8);
  for (std::uint32_t i = 0; i < 8; ++i) indices[i] = i;
  gather_batch(data, indices, batch);
  CHECK_NOTHROW(model.loss_and_gradient(params, batch, grads, ws));
  std::vector<float> short_grads(model.parameter_count() - 1);
  CHECK_THROWS_WITH_AS(model.loss_and_gradient(params, batch, short_grads, ws),
                       doctest::Contains(fmt::format("{} grads", short_grads.size()).c_str()), std::invalid_argument);
  Batch wide(8, 14);
  wide.size = 8;
  CHECK_THROWS_WITH_AS(model.loss_and_gradient(params, wide, grads, ws), doctest::Contains("14 features"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(model.evaluate(std::span<const float>(params).first(10), data, ws), doctest::Contains("10 params"),
                       std::invalid_argument);

  Sgd sgd(SgdOptions{}, model.parameter_count());
  CHECK_THROWS_WITH_AS(sgd.step(std::span<float>(params).first(10), std::span<const float>(grads).first(10)),
                       doctest::Contains("10 params for a model of"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(sgd.step_range(std::span<float>(params).first(10), std::span<const float>(grads).first(10),
                                      model.parameter_count() - 5, 1.0f),
                       doctest::Contains("is outside the model"), std::invalid_argument);
  CHECK_THROWS_AS(make_blobs(4, 3, 0, 0.1f, 1), std::invalid_argument);
  CHECK_THROWS_AS(make_blobs(4, 3, 257, 0.1f, 1), std::invalid_argument);
}

TEST_CASE("the softmax's vectorizable exp is within 2 ulp of e^x on [-87, 0] and never underflows below") {
  int worst_ulps = 0;
  for (int i = 0; i <= 870000; ++i) {
    const float x = -static_cast<float>(i) * 1e-4f;
    const auto exact = static_cast<float>(std::exp(static_cast<double>(x)));
    const int ulps = std::abs(std::bit_cast<std::int32_t>(exp_nonpositive(x)) - std::bit_cast<std::int32_t>(exact));
    worst_ulps = std::max(worst_ulps, ulps);
  }
  CHECK(worst_ulps <= 2);
  CHECK(exp_nonpositive(0.0f) == 1.0f);
  CHECK(exp_nonpositive(-1000.0f) > 0.0f);
  CHECK(exp_nonpositive(-1000.0f) < 2e-38f);
}

TEST_CASE("the softmax loss's vectorizable log is within 1 ulp of ln x on [1e-30, 1]") {
  // Every 61st float of the range (about 14 million, all exponents and both sides of sqrt(1/2)), then the ends.
  const auto first = std::bit_cast<std::uint32_t>(1e-30f), last = std::bit_cast<std::uint32_t>(1.0f);
  int worst_ulps = 0;
  const auto check = [&](std::uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    const auto exact = static_cast<float>(std::log(static_cast<double>(x)));
    const int ulps = std::abs(std::bit_cast<std::int32_t>(log_positive(x)) - std::bit_cast<std::int32_t>(exact));
    worst_ulps = std::max(worst_ulps, ulps);
  };
  for (std::uint32_t bits = first; bits <= last; bits += 61) check(bits);
  check(first);
  check(last);
  CHECK(worst_ulps <= 1);
  CHECK(log_positive(1.0f) == 0.0f);
}
