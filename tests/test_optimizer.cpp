// Every branch that changes numbers, against a hand computation: the optimizer's four branches (plain, weight
// decay, momentum, both) and its sub-range form, the synchronous step's 1/W, and local SGD with averaging every
// H > 1 steps, including the final average of a run that stops between two averaging steps.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/sgd.hpp"
#include "test_support.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/loop/make_synchronizer.hpp"

using namespace gradsync;

namespace {

// sgd.hpp's formula in double: v = mu v + (scale g + decay_scale wd p); p -= lr v. Without momentum there is no
// velocity, which is the same as mu = 0.
struct Reference {
  SgdOptions o;
  std::vector<double> p, v;
  void step(const std::vector<float>& g, double scale, double decay_scale = 1.0) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      v[i] = o.momentum * v[i] + scale * g[i] + decay_scale * o.weight_decay * p[i];
      p[i] -= o.lr * v[i];
    }
  }
};

void check_close(std::span<const float> got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("SGD by hand: one step of each branch, with numbers") {
  const std::vector<float> g = {0.5f, -1.0f};
  std::vector<float> p = {2.0f, -4.0f};
  Sgd plain({0.1f, 0.0f, 0.0f}, 2);
  plain.step(p, g, 2.0f);  // p -= 0.1 * 2 g
  CHECK(p[0] == doctest::Approx(1.9));
  CHECK(p[1] == doctest::Approx(-3.8));

  p = {2.0f, -4.0f};
  Sgd decay({0.1f, 0.0f, 0.5f}, 2);
  decay.step(p, g, 2.0f);  // p -= 0.1 * (2 g + 0.5 p): 2 - 0.1 * (1 + 1), -4 - 0.1 * (-2 - 2)
  CHECK(p[0] == doctest::Approx(1.8));
  CHECK(p[1] == doctest::Approx(-3.6));
  CHECK(decay.state().empty());  // no momentum, no state to checkpoint
  decay.step(p, g, 2.0f);        // 1.8 - 0.1 * (1 + 0.9), -3.6 - 0.1 * (-2 - 1.8)
  CHECK(p[0] == doctest::Approx(1.61));
  CHECK(p[1] == doctest::Approx(-3.22));

  p = {2.0f, -4.0f};
  Sgd momentum({0.1f, 0.5f, 0.0f}, 2);
  momentum.step(p, g, 2.0f);  // v = 2 g = (1, -2); p = (1.9, -3.8)
  momentum.step(p, g, 2.0f);  // v = 0.5 v + 2 g = (1.5, -3); p = (1.75, -3.5)
  CHECK(p[0] == doctest::Approx(1.75));
  CHECK(p[1] == doctest::Approx(-3.5));
  CHECK(momentum.state()[0] == doctest::Approx(1.5));

  p = {2.0f, -4.0f};
  Sgd both({0.1f, 0.5f, 0.5f}, 2);
  both.step(p, g, 2.0f);  // v = 2 g + 0.5 p = (2, -4); p = (1.8, -3.6)
  both.step(p, g, 2.0f);  // v = 0.5 v + 2 g + 0.5 p = (1 + 1 + 0.9, -2 - 2 - 1.8) = (2.9, -5.8); p = (1.51, -3.02)
  CHECK(p[0] == doctest::Approx(1.51));
  CHECK(p[1] == doctest::Approx(-3.02));
  CHECK(both.state()[1] == doctest::Approx(-5.8));
}

TEST_CASE("SGD follows its formula over many steps in every branch, on the whole model and on a sub-range") {
  const std::size_t n = 7;
  for (const SgdOptions o : {SgdOptions{0.05f, 0.0f, 0.0f}, SgdOptions{0.05f, 0.0f, 0.1f}, SgdOptions{0.05f, 0.9f, 0.0f},
                             SgdOptions{0.05f, 0.9f, 0.1f}}) {
    CAPTURE(o.momentum);
    CAPTURE(o.weight_decay);
    std::vector<float> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = 1.0f - 0.3f * static_cast<float>(i);
    Reference ref{o, std::vector<double>(p.begin(), p.end()), std::vector<double>(n, 0.0)};
    Sgd sgd(o, n);
    for (int k = 0; k < 20; ++k) {
      std::vector<float> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = std::sin(static_cast<float>(k * 7 + static_cast<int>(i)));
      sgd.step(p, g, 0.25f);
      ref.step(g, 0.25);
    }
    check_close(p, ref.p);

    // A server owning [3, 7) updates only its slice, with its own part of the velocity, and may scale the decay.
    std::vector<float> q(n);
    for (std::size_t i = 0; i < n; ++i) q[i] = 1.0f - 0.3f * static_cast<float>(i);
    Reference tail{o, std::vector<double>(q.begin() + 3, q.end()), std::vector<double>(n - 3, 0.0)};
    Sgd whole(o, n);
    std::vector<float> head_before(q.begin(), q.begin() + 3);
    for (int k = 0; k < 20; ++k) {
      std::vector<float> g(n - 3);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = std::cos(static_cast<float>(k * 5 + static_cast<int>(i)));
      whole.step_range(std::span<float>(q).subspan(3), g, 3, 0.5f, 0.25f);
      tail.step(g, 0.5, 0.25);
    }
    check_close(std::span<const float>(q).subspan(3), tail.p);
    CHECK(std::vector<float>(q.begin(), q.begin() + 3) == head_before);
    if (o.momentum != 0.0f) {
      for (std::size_t i = 0; i < 3; ++i) CHECK(whole.state()[i] == 0.0f);  // other servers' velocity untouched
      for (std::size_t i = 3; i < n; ++i) CHECK(whole.state()[i] == doctest::Approx(tail.v[i - 3]).epsilon(1e-6));
    }
  }
}

TEST_CASE("synchronous data parallelism steps with the mean gradient and the full weight decay") {
  const Comm world = Comm::world();
  const int w = world.size();
  const std::size_t n = 5;
  for (const std::string method : {"ring", "mpi"}) {
    for (const SgdOptions o : {SgdOptions{0.1f, 0.0f, 0.2f}, SgdOptions{0.1f, 0.8f, 0.2f}}) {
      CAPTURE(method);
      CAPTURE(o.momentum);
      TrainConfig config;
      config.sync = sync_method(method);
      config.sgd = o;
      Sgd sgd(o, n);
      const auto sync = make_synchronizer(config, {world, world, sgd});
      std::vector<float> p(n, 1.0f);
      Reference ref{o, std::vector<double>(n, 1.0), std::vector<double>(n, 0.0)};
      for (int k = 0; k < 6; ++k) {
        // Rank r's gradient is (r + 1 + k) * (i + 1): the mean over ranks is ((w + 1) / 2 + k) * (i + 1).
        std::vector<float> g(n), mean(n);
        for (std::size_t i = 0; i < n; ++i) {
          g[i] = static_cast<float>((world.rank() + 1 + k) * static_cast<int>(i + 1));
          mean[i] = static_cast<float>(((w + 1) / 2.0 + k) * static_cast<double>(i + 1));
        }
        sync->step(p, g);
        ref.step(mean, 1.0);
      }
      check_close(p, ref.p);
    }
  }
}

TEST_CASE("model averaging every H > 1 steps, and a final average when the run stops between two") {
  // Worker r minimizes k_r p^2 / 2 (gradient k_r p), so H local steps multiply its copy by a_r^H with
  // a_r = 1 - lr k_r, and an average makes the mean of those. Different a_r make the averaging points visible:
  // the mean of a_r^H is not (mean a_r)^H. After T = q H + m steps (0 < m < H) and the final average,
  //   p_T = p_0 (mean_r a_r^H)^q (mean_r a_r^m)
  // on every worker.
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "local SGD across replicas needs 2 ranks");
  const float lr = 0.1f;
  const std::size_t n = 3;
  const auto a_of = [&](int rank) { return 1.0 - lr * (1.0 + rank); };
  const auto mean_power = [&](int e) {
    double sum = 0;
    for (int r = 0; r < world.size(); ++r) sum += std::pow(a_of(r), e);
    return sum / world.size();
  };
  for (const std::string method : {"ring", "mpi"}) {
    for (const int h : {2, 3}) {
      for (const int steps : {2 * h, 2 * h + 1}) {
        CAPTURE(method);
        CAPTURE(h);
        CAPTURE(steps);
        TrainConfig config;
        config.sync = sync_method(method);
        config.average_every = h;
        config.sgd = {lr, 0.0f, 0.0f};
        Sgd sgd(config.sgd, n);
        const auto sync = make_synchronizer(config, {world, world, sgd});
        const std::vector<float> start = {1.0f, -2.0f, 0.5f};
        std::vector<float> p = start, g(n);
        const float k = 1.0f + static_cast<float>(world.rank());
        for (int t = 0; t < steps; ++t) {
          for (std::size_t i = 0; i < n; ++i) g[i] = k * p[i];
          sync->step(p, g);
        }
        sync->finish(p);
        const int q = steps / h, m = steps % h;
        const double factor = std::pow(mean_power(h), q) * (m > 0 ? mean_power(m) : 1.0);
        std::vector<double> expected(n);
        for (std::size_t i = 0; i < n; ++i) expected[i] = start[i] * factor;
        check_close(p, expected);
        // And one model: the ring leaves every worker with rank 0's bits (MPI_Allreduce does not promise that).
        std::vector<float> root = p;
        check_mpi(MPI_Bcast(root.data(), static_cast<int>(n), MPI_FLOAT, 0, world.native()), "MPI_Bcast", world.rank());
        if (method == "ring") CHECK(root == p);
      }
    }
  }
}
