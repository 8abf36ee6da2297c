// DP-SGD's per-example clipping pass (Model::clipped_loss_and_gradient) against per-example gradients formed one
// example at a time and clipped and summed in double; and the Gaussian noise shares of distributed DP.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/models.hpp"
#include "model/synthetic.hpp"
#include "privacy/gaussian_noise.hpp"
#include "privacy/norm_clipping.hpp"

namespace gradsync {
namespace {

struct Reference {
  std::vector<double> clipped_mean;  // (1/n) sum_j min(1, C / ||g_j||) g_j
  std::vector<double> norms;         // ||g_j||
};

// Example j's gradient from a pass over it alone, clipped and summed in double.
Reference materialized(const Model& model, std::span<const float> params, const Dataset& data,
                       std::span<const std::uint32_t> rows, double clip) {
  const std::size_t p = model.parameter_count();
  Reference ref{std::vector<double>(p, 0.0), {}};
  Workspace ws(model, 1);
  Batch one(1, data.features);
  std::vector<float> g(p);
  for (const std::uint32_t row : rows) {
    gather_batch(data, std::span(&row, 1), one);
    model.loss_and_gradient(params, one, g, ws);
    double sq = 0;
    for (const float v : g) sq += static_cast<double>(v) * v;
    const double norm = std::sqrt(sq), scale = norm > clip ? clip / norm : 1.0;
    ref.norms.push_back(norm);
    for (std::size_t i = 0; i < p; ++i) ref.clipped_mean[i] += scale * g[i] / static_cast<double>(rows.size());
  }
  return ref;
}

std::unique_ptr<Model> dense_model(std::string_view name, std::size_t features, std::size_t classes) {
  const std::size_t hidden[] = {24, 12};
  return model_info(name).make(std::span<const std::size_t>(hidden), features, classes);
}

}  // namespace

TEST_CASE("dp clipping: the clipped sum without per-example gradients equals the materialized one, every dense model") {
  const Dataset data = make_blobs(64, 30, 5, 0.4f, 21);
  for (const std::string_view name : {"softmax", "mlp", "2nn"}) {
    CAPTURE(name);
    const auto model = dense_model(name, data.features, 5);
    std::vector<float> params(model->parameter_count()), grads(params.size());
    model->init(params, 3);
    const std::size_t n = 16;
    std::vector<std::uint32_t> rows(n);
    std::iota(rows.begin(), rows.end(), 7u);
    Workspace ws(*model, n);
    Batch batch(n, data.features);
    gather_batch(data, rows, batch, model->reads_float_rows(rows.size()));  // bytes alone where the plan reads them
    // A clip between the smallest and largest norm: some examples are clipped, some not.
    std::vector<double> sorted = materialized(*model, params, data, rows, 1e30).norms;
    std::sort(sorted.begin(), sorted.end());
    const double clip = sorted[n / 2];
    REQUIRE(sorted.front() < clip);
    const Reference ref = materialized(*model, params, data, rows, clip);
    std::vector<float> norms(n);
    model->clipped_loss_and_gradient(params, batch, grads, ws, static_cast<float>(clip), norms);
    for (std::size_t j = 0; j < n; ++j) CHECK(norms[j] == doctest::Approx(ref.norms[j]).epsilon(1e-5));
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      worst = std::max(worst, std::abs(grads[i] - ref.clipped_mean[i]));
      largest = std::max(largest, std::abs(ref.clipped_mean[i]));
    }
    CHECK(largest > 0);
    CHECK(worst <= 2e-6 * largest);
  }
}

TEST_CASE("dp clipping: a clip no example reaches gives the plain pass's gradient bit for bit") {
  const Dataset data = make_blobs(40, 30, 5, 0.4f, 22);
  for (const std::string_view name : {"softmax", "mlp", "2nn"}) {
    CAPTURE(name);
    const auto model = dense_model(name, data.features, 5);
    std::vector<float> params(model->parameter_count()), plain(params.size()), clipped(params.size(), -1.0f);
    model->init(params, 4);
    std::vector<std::uint32_t> rows(32);
    std::iota(rows.begin(), rows.end(), 3u);
    Workspace ws(*model, rows.size());
    Batch batch(rows.size(), data.features);
    gather_batch(data, rows, batch, model->reads_float_rows(rows.size()));  // bytes alone where the plan reads them
    const float plain_loss = model->loss_and_gradient(params, batch, plain, ws);
    const float loss = model->clipped_loss_and_gradient(params, batch, clipped, ws, 1e30f, {});
    CHECK(loss == plain_loss);
    CHECK(std::memcmp(plain.data(), clipped.data(), plain.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("dp clipping: the CNN refuses per-example clipping, saying why") {
  const auto model = model_info("cnn").make({}, 16, 3);
  std::vector<float> params(model->parameter_count()), grads(params.size());
  const Dataset data = make_blobs(4, 16, 3, 0.4f, 1);
  Workspace ws(*model, 4);
  Batch batch(4, 16);
  const std::uint32_t rows[] = {0, 1, 2, 3};
  gather_batch(data, rows, batch);
  CHECK_THROWS_WITH_AS(model->clipped_loss_and_gradient(params, batch, grads, ws, 1.0f, {}),
                       doctest::Contains("materialized"), std::invalid_argument);
}

TEST_CASE("dp clipping: a client's whole update is clipped to the norm, and left alone below it") {
  std::vector<float> update = {3.0f, -4.0f, 0.0f, 12.0f};  // norm 13
  const std::vector<float> original = update;
  CHECK(clip_to_norm(update, 20.0) == doctest::Approx(13.0));
  CHECK(update == original);
  CHECK(clip_to_norm(update, 6.5) == doctest::Approx(13.0));
  double sq = 0;
  for (std::size_t i = 0; i < update.size(); ++i) {
    CHECK(update[i] == doctest::Approx(original[i] / 2.0));
    sq += static_cast<double>(update[i]) * update[i];
  }
  CHECK(std::sqrt(sq) == doctest::Approx(6.5));
  CHECK_THROWS_AS(clip_to_norm(update, 0), std::invalid_argument);
}

TEST_CASE("dp noise: the workers' shares sum to noise of standard deviation sigma C") {
  const Comm comm = Comm::world();
  const double sigma = 1.3, clip = 0.7, batch = 8;
  const std::size_t count = 200000;
  std::vector<float> noise(count, 0.0f);
  GaussianNoise(99, comm.rank()).add(noise, noise_share_std(sigma, clip, comm.size(), batch));
  std::vector<double> sum(noise.begin(), noise.end());
  comm.sum_in_place(sum);
  double mean = 0, var = 0;
  for (const double v : sum) mean += v / count;
  for (const double v : sum) var += (v - mean) * (v - mean) / (count - 1);
  // The sample variance's relative standard error is sqrt(2 / count) = 0.3 %: 2 % is over six of them.
  const double expected = sigma * clip / batch * (sigma * clip / batch);
  CHECK(var == doctest::Approx(expected).epsilon(0.02));
  CHECK(std::abs(mean) < 5 * std::sqrt(expected / count));
  CHECK_THROWS_AS(noise_share_std(1, 0, 2), std::invalid_argument);
}

}  // namespace gradsync
