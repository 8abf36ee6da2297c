// DP-SGD and secure aggregation wired into train (issue 56): the worker's clipped and noised gradient, the secure
// synchronizer of the allreduce family, the epsilon the run reports and the flags' refusals.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "privacy/fixed_point.hpp"
#include "privacy/rdp_accountant.hpp"
#include "test_support.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/privacy_budget.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/loop/private_gradient.hpp"
#include "trainers/loop/trainer.hpp"
#include "trainers/report/privacy_report.hpp"

using namespace gradsync;

namespace {

constexpr long kSteps = 24;

// Rank 0's final model (the result holds it there only) on every rank of `comm`.
std::vector<float> shared_params(const Comm& comm, const TrainResult& r) {
  std::vector<float> p = r.params;
  unsigned long n = p.size();
  check_mpi(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG, 0, comm.native()), "MPI_Bcast", comm.rank());
  p.resize(n);
  check_mpi(MPI_Bcast(p.data(), static_cast<int>(n), MPI_FLOAT, 0, comm.native()), "MPI_Bcast", comm.rank());
  return p;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

TEST_CASE("DP-SGD with --dp-noise 0 and a clip no gradient reaches trains bit for bit as plain SGD") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  for (const char* sync : {"ring", "serial"}) {
    const Comm comm = std::string(sync) == "serial" ? Comm(MPI_COMM_SELF) : world;
    TrainConfig c = test::small_mlp(sync, 4, kSteps);
    const TrainResult plain = train(c, data, comm);
    c.privacy.dp_clip = 1e6;  // far above any example's gradient norm on the blobs
    const TrainResult clipped = train(c, data, comm);
    const std::string name = sync;
    CAPTURE(name);
    CHECK(shared_params(comm, clipped) == shared_params(comm, plain));
    if (comm.rank() == 0) CHECK(std::isinf(clipped.epochs.back().dp_epsilon));  // no noise: no privacy
  }
}

TEST_CASE(
    "DP-SGD with noise moves the model off the clipped run's, still trains, and reports the accountant's "
    "epsilon") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  TrainConfig c = test::small_mlp("ring", 8, 64);
  c.privacy.dp_clip = 1;
  const TrainResult clipped = train(c, data, world);
  c.privacy.dp_noise = 1;
  const TrainResult noised = train(c, data, world);
  CHECK(test::relative_difference(shared_params(world, noised), shared_params(world, clipped)) > 1e-3);
  if (world.rank() != 0) return;
  CHECK(noised.test_accuracy > 0.8);  // four separable blobs: chance is 0.25
  const EpochReport& e = noised.epochs.back();
  const double q = 8.0 * world.size() / 1024.0;
  CHECK(e.dp_rate == doctest::Approx(q));
  CHECK(e.dp_epsilon == doctest::Approx(dp_sgd_epsilon(q, 1.0, 64, 1e-5).epsilon).epsilon(1e-12));
  CHECK(e.dp_epsilon > 0);
}

TEST_CASE("a worker's DP gradient is the clipped mean plus its noise share of std sigma C / (sqrt(p) b)") {
  const TrainTest data = test::blobs();
  TrainConfig c = test::small_mlp("serial", 16, 1);
  c.hidden = {512};  // enough coordinates for the sample's std to be within 3% of the configured one
  const std::unique_ptr<Model> model = make_model(c, data.train.features, static_cast<std::size_t>(data.train.classes));
  std::vector<float> params(model->parameter_count()), plain(params.size()), noised(params.size());
  model->init(params, 5);
  Batch batch(16, data.train.features);
  std::vector<std::uint32_t> rows(16);
  for (std::uint32_t i = 0; i < 16; ++i) rows[i] = i;
  gather_batch(data.train, rows, batch, true);
  Workspace ws(*model, 16);
  PrivacyOptions o;
  o.dp_clip = 0.5;
  o.dp_noise = 1.3;
  const int workers = 4;
  std::vector<float> norms(16);
  model->clipped_loss_and_gradient(params, batch, plain, ws, 0.5f, norms);
  PrivateGradient dp(o, 9, 2, workers, 16);
  dp.compute(*model, params, batch, noised, ws);
  double sum = 0, sq = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const double d = double(noised[i]) - plain[i];
    sum += d, sq += d * d;
  }
  const double count = static_cast<double>(plain.size());
  const double want = 1.3 * 0.5 / (std::sqrt(double(workers)) * 16);
  CHECK(dp.noise_std() == doctest::Approx(want));
  CHECK(std::abs(sum / count) < 4 * want / std::sqrt(count));
  CHECK(std::sqrt(sq / count) == doctest::Approx(want).epsilon(0.03));
  PrivateGradient other_rank(o, 9, 3, workers, 16);
  std::vector<float> other(params.size());
  other_rank.compute(*model, params, batch, other, ws);
  CHECK(other != noised);  // ranks draw independent noise
}

TEST_CASE("secure aggregation trains as the plain ring, to the fixed point's resolution, on 1 to 4 workers") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  for (int p = 1; p <= std::min(world.size(), 4); ++p) {
    const Comm comm = world.split(world.rank() < p ? 0 : MPI_UNDEFINED, world.rank());
    if (!comm.valid()) continue;
    TrainConfig c = test::small_mlp("ring", 4, kSteps);
    const TrainResult ring = train(c, data, comm);
    c.privacy.secure_aggregation = true;
    c.privacy.secure_range = 16;  // above every gradient value of these runs: none is clipped
    const TrainResult secure = train(c, data, comm);
    const std::vector<float> a = shared_params(comm, ring), b = shared_params(comm, secure);
    REQUIRE(!a.empty());
    // Each step's mean gradient differs from the exact mean by at most half a code, R / (2 M), M = floor((2^31 - 1)
    // / p) (R = 16, no value clipped on the blobs), against the ring's float rounding of the sum (about 2^-24 of the
    // gradient): a model that differs by less than lr * steps * (R / (2 M) + 1e-6) per parameter (no other rounding
    // is amplified in 24 steps of a small MLP; the plain runs at p = 1..4 differ from serial SGD by 1e-5 relative).
    const FixedPoint fp(16.0, p);
    const double bound = 0.2 * kSteps * (0.5 / fp.scale() + 1e-6);
    CAPTURE(p);
    CHECK(max_abs_difference(a, b) <= bound);
    CHECK(test::relative_difference(a, b) < 1e-5);
  }
}

TEST_CASE("train refuses secure aggregation and DP-SGD where they would not hold, naming the flags") {
  const auto problem = [](std::vector<std::string> args) {
    const CliOutcome parsed = parse_train_args(std::move(args));
    return parsed.config ? validate(*parsed.config, 4) : parsed.message;
  };
  const std::string compressed = problem({"--sync", "ring", "--secure-aggregation", "--compress", "sign"});
  CHECK(compressed.find("--secure-aggregation") != std::string::npos);
  CHECK(compressed.find("--compress") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--secure-aggregation", "--buckets"}).find("--buckets") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--secure-aggregation", "--average-every", "2"}).find("--average-every") !=
        std::string::npos);
  CHECK(problem({"--sync", "gossip", "--secure-aggregation"}).find("--secure-aggregation") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--dp-clip", "1", "--pipeline", "1"}).find("--pipeline") != std::string::npos);
  CHECK(problem({"--sync", "gossip", "--dp-clip", "1"}).find("--dp-clip") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--dp-noise", "1"}).find("--dp-noise: only with --dp-clip") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--secure-range", "2"}).find("--secure-range") != std::string::npos);
  CHECK(problem({"--sync", "ring", "--dp-clip", "1", "--dp-noise", "1", "--secure-aggregation"}).empty());
}

TEST_CASE("the DP-SGD setup line gives the noise share and q of the batch the run resolves, --global-batch too") {
  // 256 a global batch over 2 workers is 128 each: noise sigma C / (sqrt(2) 128) on each mean gradient, q 256 / 60000.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--sync", "ring", "--global-batch", "256", "--dp-clip", "1", "--dp-noise", "1.12"},
        std::vector<std::string>{"--sync", "ring", "--batch", "128", "--dp-clip", "1", "--dp-noise", "1.12"}}) {
    CAPTURE(args[2]);
    const CliOutcome out = parse_train_args(args);
    REQUIRE(out.config);
    const std::string line = format_privacy_setup(*out.config, 2, 60000, 1000);
    const double share = 1.12 * 1.0 / (std::sqrt(2.0) * 128);
    CHECK(line.find(fmt::format("adds std {:.3g} ", share)) != std::string::npos);
    CHECK(line.find(fmt::format("q = {:.5f}", 256.0 / 60000)) != std::string::npos);
  }
}
