// Attacks at test time (attacks/evasion.hpp) and the input gradient they run on (Model::input_gradient): the
// gradient against central finite differences of the loss, FGSM's and PGD's perturbations against their
// definitions, and the spec parser.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attacks/evasion.hpp"
#include "model/mlp.hpp"
#include "model/models.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"

using namespace gradsync;

namespace {

// A batch of `n` random images of `features` pixels in [0, 1], as float rows, with labels.
Batch random_batch(std::size_t n, std::size_t features, std::uint64_t seed) {
  Batch b(n, features);
  Rng rng(seed);
  for (float& x : b.rows) x = rng.uniform();
  for (std::uint8_t& y : b.labels) y = static_cast<std::uint8_t>(rng.below(10));
  b.size = n;
  b.has_rows = true;
  return b;
}

float loss_at(const Model& m, std::span<const float> params, const Batch& b, Workspace& ws) {
  std::vector<float> scratch(b.size * b.features);
  return m.input_gradient(params, b, scratch, ws);
}

}  // namespace

TEST_CASE("the input gradient of softmax regression and of an MLP matches finite differences of the loss") {
  for (const std::vector<std::size_t>& sizes : {std::vector<std::size_t>{12, 10}, {12, 9, 7, 10}}) {
    const Mlp model(sizes);
    std::vector<float> params(model.parameter_count());
    model.init(params, 3);
    Workspace ws(model, 4);
    Batch b = random_batch(3, 12, 17);
    std::vector<float> grad(3 * 12);
    std::vector<std::uint8_t> correct(3, 9);
    const float loss = model.input_gradient(params, b, grad, ws, correct);
    if (sizes.size() == 2) {  // softmax regression's mean cross-entropy, written out: W (10 x 12), then b
      double expect = 0;
      for (std::size_t j = 0; j < 3; ++j) {
        std::vector<double> z(10);
        for (std::size_t c = 0; c < 10; ++c) {
          z[c] = params[120 + c];
          for (std::size_t i = 0; i < 12; ++i) z[c] += static_cast<double>(params[c * 12 + i]) * b.rows[j * 12 + i];
        }
        double total = 0;
        for (const double v : z) total += std::exp(v);
        expect += std::log(total) - z[b.labels[j]];
      }
      CHECK(loss == doctest::Approx(expect / 3).epsilon(1e-5));
    }
    CHECK(std::all_of(correct.begin(), correct.end(), [](std::uint8_t c) { return c <= 1; }));
    const float h = 1e-3f;
    int bad = 0;
    for (std::size_t k = 0; k < grad.size(); ++k) {
      Batch plus = b, minus = b;
      plus.rows[k] += h;
      minus.rows[k] -= h;
      const double fd =
          (static_cast<double>(loss_at(model, params, plus, ws)) - loss_at(model, params, minus, ws)) / (2 * h);
      bad += std::abs(fd - grad[k]) > 2e-3 + 0.02 * std::abs(fd);
    }
    INFO(model.describe());
    CHECK(bad == 0);
  }
}

TEST_CASE("FGSM moves each pixel by eps along the gradient's sign within [0, 1]; PGD stays in the eps ball") {
  const Mlp model({12, 9, 10});
  std::vector<float> params(model.parameter_count());
  model.init(params, 5);
  Workspace ws(model, 4);
  EvasionScratch scratch(model, 4);
  const Batch clean = random_batch(4, 12, 23);
  std::vector<float> grad(4 * 12);
  model.input_gradient(params, clean, grad, ws);
  Batch adv = clean;
  fgsm(model, params, adv, 0.1f, ws, scratch);
  for (std::size_t k = 0; k < grad.size(); ++k) {
    const float s = grad[k] > 0 ? 1.0f : grad[k] < 0 ? -1.0f : 0.0f;
    CHECK(adv.rows[k] == std::clamp(clean.rows[k] + 0.1f * s, 0.0f, 1.0f));
  }
  CHECK(loss_at(model, params, adv, ws) > loss_at(model, params, clean, ws));

  Batch projected = clean;
  pgd(model, params, projected, 0.1f, 5, ws, scratch);
  for (std::size_t k = 0; k < grad.size(); ++k) {
    CHECK(std::abs(projected.rows[k] - clean.rows[k]) <= 0.1f + 1e-7f);
    CHECK(projected.rows[k] >= 0.0f);
    CHECK(projected.rows[k] <= 1.0f);
  }
  CHECK(loss_at(model, params, projected, ws) > loss_at(model, params, clean, ws));
}

TEST_CASE("evasion specs parse, and a model without an input gradient is refused by name") {
  const EvasionSpec f = parse_evasion("fgsm:0.25");
  CHECK(f.kind == EvasionSpec::Kind::fgsm);
  CHECK(f.eps == 0.25f);
  const EvasionSpec p = parse_evasion("pgd:0.1,10");
  CHECK(p.kind == EvasionSpec::Kind::pgd);
  CHECK(p.steps == 10);
  for (const std::string bad : {"fgsm", "fgsm:0", "fgsm:2", "fgsm:0.1,3", "pgd:0.1", "pgd:0.1,0", "cw:0.1"}) {
    std::string message;
    try {
      parse_evasion(bad);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    INFO(bad);
    CHECK(test::contains(message, "'" + bad + "'"));
  }
  const auto cnn = model_info("cnn").make({}, 784, 10);
  std::vector<float> params(cnn->parameter_count());
  Workspace ws(*cnn, 1);
  Batch b = random_batch(1, 784, 1);
  std::vector<float> grad(784);
  std::string message;
  try {
    cnn->input_gradient(params, b, grad, ws);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  CHECK(test::contains(message, cnn->describe()));
}
