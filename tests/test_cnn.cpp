// The models McMahan et al. train (model/models.hpp): the 2NN's and the CNN's sizes, the CNN's forward and backward
// pass against finite differences and against a direct convolution, its gradient reported to an observer as the
// overlap engine needs it, its kernel plan agreed by every rank, and data-parallel training of it equal to serial SGD.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cnn_reference.hpp"
#include "collectives/comm.hpp"
#include "model/cnn.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/models.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// Small enough to check every parameter by finite differences: 8x8 images, 3 and 4 channels, 6 hidden, 3 classes.
CnnShape small_cnn_shape(std::size_t cols_bytes = std::size_t{1} << 20) {
  return {.side = 8, .channels1 = 3, .channels2 = 4, .hidden = 6, .classes = 3, .cols_bytes = cols_bytes};
}

// `rows` generated images for `model`, gathered into one batch (float rows), with the data kept alive.
struct CnnExamples {
  CnnExamples(const Cnn& model, std::size_t rows, std::uint64_t seed)
      : data(make_blobs(rows, model.input_features(), static_cast<int>(model.shape().classes), 0.3f, seed)),
        batch(rows, data.features) {
    std::vector<std::uint32_t> all(rows);
    for (std::uint32_t i = 0; i < rows; ++i) all[i] = i;
    gather_batch(data, all, batch);
  }
  Dataset data;
  Batch batch;
};

// Each layer's weights and biases against the reference: ||got - want|| / ||want|| per tensor.
void check_cnn_against_reference(const Cnn& model, std::span<const float> params, const Batch& batch, Workspace& ws,
                                 double tolerance) {
  std::vector<float> grads(model.parameter_count());
  const float loss = model.loss_and_gradient(params, batch, grads, ws);
  const test::CnnReference want = test::cnn_reference(model, params, batch);
  CHECK(loss == doctest::Approx(want.loss).epsilon(1e-5));
  for (std::size_t l = 0; l < model.layers().size(); ++l) {
    const LayerShape& layer = model.layers()[l];
    for (const auto& [begin, end] : {std::pair{layer.offset, layer.bias_offset()}, {layer.bias_offset(), layer.end()}}) {
      double diff = 0, norm = 0;
      for (std::size_t i = begin; i < end; ++i) {
        diff += (grads[i] - want.grads[i]) * (grads[i] - want.grads[i]);
        norm += want.grads[i] * want.grads[i];
      }
      CAPTURE(l);
      CAPTURE(begin == layer.offset ? "weights" : "biases");
      CHECK(norm > 0);  // the batch reaches every tensor, so the check is not vacuous
      CHECK(std::sqrt(diff) <= tolerance * std::sqrt(norm));
    }
  }
}

}  // namespace

TEST_CASE("cnn: the 2NN has 199,210 parameters and the CNN 1,663,370, laid out a layer after another") {
  TrainConfig c;
  c.model = &model_info("2nn");
  const std::unique_ptr<Model> two_nn = make_model(c, 784, 10);
  CHECK(two_nn->parameter_count() == 199210);
  CHECK(two_nn->describe() == "784-200-200-10");
  c.model = &model_info("cnn");
  const std::unique_ptr<Model> cnn = make_model(c, 784, 10);
  CHECK(cnn->parameter_count() == 1663370);
  CHECK(cnn->describe() == "28x28-conv5x5x32-pool2-conv5x5x64-pool2-512-10");
  const std::vector<LayerShape> want = {{0, 32, 25}, {832, 64, 800}, {52096, 512, 3136}, {1658240, 10, 512}};
  CHECK(cnn->layers() == want);
  std::vector<float> a(cnn->parameter_count()), b(a.size());
  cnn->init(a, 7);
  cnn->init(b, 7);
  CHECK(a == b);  // deterministic from the seed
  CHECK(std::all_of(a.begin() + 32 * 25, a.begin() + 832, [](float v) { return v == 0.0f; }));  // zero biases
  CHECK(std::count(a.begin(), a.begin() + 800, 0.0f) < 3);
}

TEST_CASE("cnn: the command line takes --model 2nn and cnn, refuses --hidden with them and a cnn on non-square data") {
  const CliOutcome cnn = parse_train_args({"--model", "cnn"});
  REQUIRE(cnn.config);
  CHECK(cnn.config->model_name() == "cnn");
  const CliOutcome two_nn = parse_train_args({"--model", "2nn"});
  REQUIRE(two_nn.config);
  CHECK(two_nn.config->model_name() == "2nn");
  const CliOutcome hidden = parse_train_args({"--model", "cnn", "--hidden", "64"});
  CHECK(!hidden.config);
  CHECK(hidden.message.find("--hidden: not with --model cnn") != std::string::npos);
  const CliOutcome unknown = parse_train_args({"--model", "resnet"});
  CHECK(!unknown.config);
  CHECK(unknown.message.find("--model: unknown model 'resnet' (choose softmax, mlp, 2nn, cnn)") != std::string::npos);
  CHECK(validate_model_against_data(*cnn.config, 784).empty());
  CHECK(validate_model_against_data(*cnn.config, 20).find("--model cnn: needs square images") == 0);
  CHECK(validate_model_against_data(*cnn.config, 36).find("a multiple of 4, not 36 pixels") != std::string::npos);
  CHECK(validate_model_against_data(*two_nn.config, 20).empty());
  CHECK_THROWS_AS(make_model(*cnn.config, 20, 4), std::invalid_argument);
}

TEST_CASE("cnn: forward and backward equal a direct convolution in double precision, however the images are grouped") {
  // One group of images per GEMM, one image per GEMM, and groups of two with a ragged last one (5 = 2 + 2 + 1).
  for (const std::size_t cols_bytes : {std::size_t{1} << 20, std::size_t{1}, std::size_t{13000}}) {
    CAPTURE(cols_bytes);
    const Cnn model(small_cnn_shape(cols_bytes));
    const CnnExamples ex(model, 5, 21);
    std::vector<float> params(model.parameter_count());
    model.init(params, 4);
    for (std::size_t i = 0; i < params.size(); i += 7) params[i] += 0.05f;  // biases too, so ReLU cuts somewhere
    Workspace ws(model, 5);
    check_cnn_against_reference(model, params, ex.batch, ws, 1e-5);
  }
  // MNIST's shape (28 -> 14 -> 7), the default grouping.
  const Cnn mnist;
  const CnnExamples ex(mnist, 3, 22);
  std::vector<float> params(mnist.parameter_count());
  mnist.init(params, 5);
  Workspace ws(mnist, 4);
  check_cnn_against_reference(mnist, params, ex.batch, ws, 1e-4);
}

// Central finite differences of the loss at every parameter of a small CNN. ReLU and the max pool's choice are not
// differentiable everywhere; a coordinate whose step crosses such a kink shows it as disagreeing one-sided
// differences, and is excluded (and counted) rather than compared, as tests/test_model.cpp does for the MLP.
TEST_CASE("cnn: the gradient matches finite differences of the loss at every parameter") {
  const Cnn model(small_cnn_shape(13000));
  const CnnExamples ex(model, 6, 11);
  std::vector<float> params(model.parameter_count()), grads(params.size()), scratch(params.size());
  model.init(params, 3);
  Workspace ws(model, 6);
  const auto loss = [&] { return double(model.loss_and_gradient(params, ex.batch, scratch, ws)); };
  model.loss_and_gradient(params, ex.batch, grads, ws);
  const double at = loss();
  // A step smaller than the MLP's 3e-3: a convolution weight moves every pixel's pre-activation, and a wider step
  // crosses more pool and ReLU kinks too small for the one-sided test to see (at 3e-3 five coordinates differed
  // by 1-3% from the direct reference, which the analytic gradient matches to 1e-5).
  const float h = 1e-3f;
  int checked = 0, bad = 0, kinks = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float keep = params[i];
    params[i] = keep + h;
    const double up = loss();
    params[i] = keep - h;
    const double down = loss();
    params[i] = keep;
    const double forward = (up - at) / h, backward = (at - down) / h, numeric = (up - down) / (2 * h);
    // Across a kink the central difference is off by at most half the one-sided slopes' difference: a coordinate
    // whose difference could exceed the tolerance below is a kink's.
    if (std::fabs(forward - backward) > 1e-3 + 1e-2 * std::fabs(numeric)) {
      ++kinks;
      continue;
    }
    ++checked;
    if (std::fabs(numeric - grads[i]) > 1e-3 + 1e-2 * std::fabs(grads[i])) {
      ++bad;
      MESSAGE("coordinate " << i << ": analytic " << grads[i] << ", numeric " << numeric);
    }
  }
  MESSAGE(checked << " coordinates compared, " << kinks << " at a kink");
  CHECK(checked > static_cast<int>(params.size() * 9 / 10));
  CHECK(bad == 0);
}

TEST_CASE(
    "cnn: an observed pass computes the unobserved pass's bits and reports each gradient element once, from the end") {
  struct Counter final : PassObserver {
    std::size_t ready_from = 0, reports = 0, calls = 0;
    bool contiguous = true;
    void gradient_ready(std::size_t begin, std::size_t end) override {
      contiguous = contiguous && end == ready_from && begin < end;
      ready_from = begin;
      ++reports;
    }
    void between_kernels() override { ++calls; }
  };
  const Cnn model(small_cnn_shape(13000));
  const CnnExamples ex(model, 5, 9);
  std::vector<float> params(model.parameter_count()), plain(params.size()), observed(params.size());
  model.init(params, 1);
  Workspace ws(model, 5);
  const float a = model.loss_and_gradient(params, ex.batch, plain, ws);
  Counter counter;
  counter.ready_from = model.parameter_count();
  const float b = model.loss_and_gradient(params, ex.batch, observed, ws, &counter);
  CHECK(a == b);
  CHECK(plain == observed);
  CHECK(counter.contiguous);
  CHECK(counter.ready_from == 0);
  CHECK(counter.reports >= 8);  // 4 layers x (weights, biases)
  CHECK(counter.calls >= 12);   // after every group of every convolution, both ways, and every dense kernel
  Workspace other(Cnn(small_cnn_shape(1)), 5);  // grouped otherwise: another model's scratch
  CHECK_THROWS_WITH_AS(model.loss_and_gradient(params, ex.batch, plain, other), doctest::Contains("another model"),
                       std::invalid_argument);
  Workspace small(model, 4);
  CHECK_THROWS_WITH_AS(model.loss_and_gradient(params, ex.batch, plain, small),
                       doctest::Contains("batch of 5 rows, the workspace holds 1..4"), std::invalid_argument);
}
