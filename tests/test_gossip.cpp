// Decentralized training: the topologies' mixing matrices, the gossip exchange's arithmetic and traffic, asynchronous
// pairwise gossip, local SGD's outer optimizer, and the gossip family end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numbers>
#include <span>
#include <utility>
#include <vector>

#include "collectives/agreement.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/gossip_cost.hpp"
#include "collectives/gossip_exchange.hpp"
#include "collectives/pair_gossip.hpp"
#include "collectives/topology.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/families/gossip/gossip_options.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

using test::values_of;

// Every rank's vector on every rank (rank order), in double.
std::vector<std::vector<double>> all_vectors(const Comm& comm, std::span<const float> mine) {
  const std::vector<float> flat = comm.all_gather(mine);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r)
    out[static_cast<std::size_t>(r)].assign(flat.begin() + static_cast<long>(r * mine.size()),
                                            flat.begin() + static_cast<long>((r + 1) * mine.size()));
  return out;
}

std::vector<double> mean_of(const std::vector<std::vector<double>>& all) {
  std::vector<double> mean(all[0].size(), 0.0);
  for (const auto& v : all)
    for (std::size_t k = 0; k < v.size(); ++k) mean[k] += v[k] / static_cast<double>(all.size());
  return mean;
}

double max_abs_difference(std::span<const float> a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(static_cast<double>(a[k]) - b[k]));
  return worst;
}

// The test's own spectral gap, by another road than topology.cpp's Jacobi rotations: power iteration on
// S = M^T M - J/p (positive semi-definite), M the product of W over a period, converging to sigma_2(M)^2.
double gap_by_power_iteration(Topology t, int p) {
  const int period = topology_period(t, p);
  std::vector<double> m(static_cast<std::size_t>(p) * p, 0.0);
  for (int i = 0; i < p; ++i) m[static_cast<std::size_t>(i) * p + i] = 1;
  for (int s = 0; s < period; ++s) {
    const std::vector<double> w = mixing_matrix(t, p, s);
    std::vector<double> next(m.size(), 0.0);
    for (int i = 0; i < p; ++i)
      for (int k = 0; k < p; ++k)
        for (int j = 0; j < p; ++j)
          next[static_cast<std::size_t>(i) * p + j] +=
              w[static_cast<std::size_t>(i) * p + k] * m[static_cast<std::size_t>(k) * p + j];
    m = next;
  }
  std::vector<double> x(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) x[static_cast<std::size_t>(i)] = std::cos(1.3 * i + 0.7) + 0.01 * i;
  double lambda = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    double mean = 0;
    for (double v : x) mean += v / p;
    for (double& v : x) v -= mean;  // S kills the all-ones direction: keep the iterate orthogonal to it
    std::vector<double> y(x.size(), 0.0), z(x.size(), 0.0);
    for (int i = 0; i < p; ++i)
      for (int j = 0; j < p; ++j)
        y[static_cast<std::size_t>(i)] += m[static_cast<std::size_t>(i) * p + j] * x[static_cast<std::size_t>(j)];
    for (int i = 0; i < p; ++i)
      for (int j = 0; j < p; ++j)
        z[static_cast<std::size_t>(j)] += m[static_cast<std::size_t>(i) * p + j] * y[static_cast<std::size_t>(i)];
    double xx = 0, xz = 0, zz = 0;
    for (std::size_t i = 0; i < x.size(); ++i) xx += x[i] * x[i], xz += x[i] * z[i], zz += z[i] * z[i];
    if (zz <= 1e-24 * xx) return 1;  // M maps everything to the mean (up to rounding): sigma_2 = 0
    lambda = xz / xx;
    const double norm = std::sqrt(zz);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = z[i] / norm;
  }
  return 1 - std::pow(std::sqrt(std::max(lambda, 0.0)), 1.0 / period);
}

}  // namespace

TEST_CASE("every topology's mixing matrix is symmetric and doubly stochastic for p = 1..16, at every step") {
  for (const TopologyInfo& t : topology_table()) {
    for (int p = 1; p <= 16; ++p) {
      for (int s = 0; s < 2 * topology_period(t.id, p); ++s) {
        CAPTURE(t.name);
        CAPTURE(p);
        CAPTURE(s);
        const std::vector<double> w = mixing_matrix(t.id, p, s);
        for (int i = 0; i < p; ++i) {
          double row = 0, column = 0;
          for (int j = 0; j < p; ++j) {
            const double wij = w[static_cast<std::size_t>(i) * p + j];
            CHECK(wij >= 0);
            CHECK(wij == doctest::Approx(w[static_cast<std::size_t>(j) * p + i]).epsilon(1e-15));
            row += wij;
            column += w[static_cast<std::size_t>(j) * p + i];
          }
          CHECK(row == doctest::Approx(1).epsilon(1e-12));
          CHECK(column == doctest::Approx(1).epsilon(1e-12));
        }
      }
    }
  }
  // The weights the documents promise, where the graph has its full degree.
  CHECK(neighbourhood(Topology::ring, 8, 0, 0).self_weight == doctest::Approx(1.0 / 3));
  CHECK(neighbourhood(Topology::torus, 16, 5, 0).peers.size() == 4u);
  CHECK(neighbourhood(Topology::torus, 16, 5, 0).self_weight == doctest::Approx(1.0 / 5));
  CHECK(neighbourhood(Topology::complete, 7, 3, 0).self_weight == doctest::Approx(1.0 / 7));
  CHECK(neighbourhood(Topology::exp, 16, 0, 0).peers.size() == 7u);     // +-1, +-2, +-4, 8
  CHECK(neighbourhood(Topology::exp1, 8, 3, 2).peers.at(0).rank == 7);  // 3 XOR 4
  CHECK(neighbourhood(Topology::exp1, 6, 5, 1).peers.empty());          // 5 XOR 2 = 7 is past the last rank
  CHECK(torus_shape(12).rows == 3);
  CHECK(torus_shape(12).columns == 4);
  CHECK(torus_shape(7).rows == 1);
}

TEST_CASE("the spectral gap at p = 1024 takes milliseconds, not the dense road's minute") {
  // Rank 0 computes it before the first epoch while the others wait; a simulated run at p = 1024 pays it.
  const auto start = std::chrono::steady_clock::now();
  for (const TopologyInfo& t : topology_table()) {
    CAPTURE(t.name);
    const double gap = spectral_gap(t.id, 1024);
    CHECK(gap > 0);
    CHECK(gap <= 1);
  }
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0);
}

TEST_CASE("the spectral gap reported matches W's eigenvalues computed independently") {
  for (const TopologyInfo& t : topology_table()) {
    for (int p = 1; p <= 16; ++p) {
      CAPTURE(t.name);
      CAPTURE(p);
      CHECK(spectral_gap(t.id, p) == doctest::Approx(gap_by_power_iteration(t.id, p)).epsilon(1e-6));
    }
  }
  // Closed forms: the ring is circulant, its eigenvalues (1 + 2 cos(2 pi k / p)) / 3.
  for (int p = 3; p <= 16; ++p) {
    double second = 0;
    for (int k = 1; k < p; ++k) second = std::max(second, std::abs((1 + 2 * std::cos(2 * std::numbers::pi * k / p)) / 3));
    CHECK(spectral_gap(Topology::ring, p) == doctest::Approx(1 - second).epsilon(1e-9));
  }
  // Past 16, where tori have more than one shape and exp more than four peers.
  for (const TopologyInfo& t : topology_table()) {
    for (int p : {24, 30, 36, 49, 64}) {
      CAPTURE(t.name);
      CAPTURE(p);
      CHECK(spectral_gap(t.id, p) == doctest::Approx(gap_by_power_iteration(t.id, p)).epsilon(1e-6));
    }
  }
  CHECK(spectral_gap(Topology::complete, 9) == doctest::Approx(1));
  CHECK(spectral_gap(Topology::exp1, 16) == doctest::Approx(1));  // one period of exp1 averages exactly
  // "The better connected, the faster it agrees": at p = 16 the gaps order the topologies.
  CHECK(spectral_gap(Topology::ring, 16) < spectral_gap(Topology::torus, 16));
  CHECK(spectral_gap(Topology::torus, 16) < spectral_gap(Topology::exp, 16));
  CHECK(spectral_gap(Topology::exp, 16) < spectral_gap(Topology::complete, 16));
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
  return worst;
}

TEST_CASE("a gossip step with zero gradient preserves the ranks' mean model (float32 against float64)") {
  const Comm world = Comm::world();
  const std::size_t n = 1003;
  for (const TopologyInfo& t : topology_table()) {
    CAPTURE(t.name);
    GossipExchange exchange(world, t.id, n);
    std::vector<float> x = values_of(world.rank(), n);
    const std::vector<double> before = mean_of(all_vectors(world, x));
    for (long step = 0; step < 3; ++step) {
      exchange.start(step, x);
      exchange.wait();
      exchange.mix(x, x);  // zero gradient: the step is the mix alone
    }
    // Values below 1 in magnitude, a few float roundings each step.
    CHECK(max_difference(mean_of(all_vectors(world, x)), before) < 1e-6);
  }
}

TEST_CASE("complete gossip equals allreduce averaging") {
  const Comm world = Comm::world();
  const std::size_t n = 517;
  GossipExchange exchange(world, Topology::complete, n);
  std::vector<float> x = values_of(world.rank(), n, 5);
  std::vector<float> summed = x;
  world.sum_in_place(summed);
  exchange.start(0, x);
  exchange.wait();
  exchange.mix(x, x);
  const float inv = 1.0f / static_cast<float>(world.size());
  for (std::size_t k = 0; k < n; ++k) CHECK(x[k] == doctest::Approx(summed[k] * inv).epsilon(1e-6));
}

TEST_CASE("after log2 p steps of exp1 every rank holds the mean" * doctest::test_suite("needs_power_of_two")) {
  const Comm world = Comm::world();
  const int p = world.size();
  SKIP_UNLESS(p > 1 && (p & (p - 1)) == 0, "exp1 averages exactly only on a power of two ranks (more than one)");
  const std::size_t n = 301;
  GossipExchange exchange(world, Topology::exp1, n);
  std::vector<float> x = values_of(world.rank(), n, 2);
  const std::vector<double> mean = mean_of(all_vectors(world, x));
  for (long step = 0; step < exchange.period(); ++step) {
    exchange.start(step, x);
    exchange.wait();
    exchange.mix(x, x);
  }
  CHECK(max_abs_difference(x, mean) < 1e-6);
}

TEST_CASE("each gossip step sends the vector to exactly the topology's neighbours, and nothing else") {
  const Comm world = Comm::world();
  const std::size_t n = 999;
  for (const TopologyInfo& t : topology_table()) {
    CAPTURE(t.name);
    GossipExchange exchange(world, t.id, n);
    std::vector<float> x = values_of(world.rank(), n);
    for (long step = 0; step < exchange.period() + 1; ++step) {
      CAPTURE(step);
      traffic::Recording rec;
      exchange.start(step, x);
      exchange.wait();
      std::vector<int> expected;
      for (const Peer& peer : neighbourhood(t.id, world.size(), world.rank(), step).peers) expected.push_back(peer.rank);
      CHECK(rec.send_peers() == expected);
      CHECK(rec.receive_peers() == expected);
      CHECK(rec.sends.size() == expected.size());
      for (const traffic::Message& m : rec.sends) CHECK(m.bytes == n * sizeof(float));
      CHECK(rec.collectives.empty());
    }
  }
}

TEST_CASE("ranks that disagree on the gossip configuration fail on every rank, naming it, instead of hanging") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "needs two ranks to disagree");
  const std::size_t n = world.rank() == 1 ? 100 : 101;
  CHECK_THROWS_AS(GossipExchange(world, Topology::ring, n), MismatchError);
  CHECK_THROWS_AS(PairGossip(world, Topology::ring, n), MismatchError);
  const Topology t = world.rank() == 1 ? Topology::exp : Topology::ring;
  CHECK_THROWS_AS(GossipExchange(world, t, 100), MismatchError);
}

TEST_CASE("asynchronous gossip averages pairs, one peer at a time, preserving the mean, and drains completely") {
  const Comm world = Comm::world();
  const std::size_t n = 257;
  for (Topology t : {Topology::ring, Topology::exp, Topology::complete}) {
    CAPTURE(topology_info(t).name);
    PairGossip pairs(world, t, n);
    std::vector<float> x = values_of(world.rank(), n, 3);
    const std::vector<double> before = mean_of(all_vectors(world, x));
    const long steps = 6;
    for (long step = 0; step < steps; ++step) {
      traffic::Recording rec;
      if (pairs.active()) {
        pairs.average_with_peer(step, x);
        const int peer = pairs.peer_of(world.rank(), step);
        CHECK(rec.send_peers() == std::vector<int>{peer});
        CHECK(peer % 2 == 1);  // an odd (passive) neighbour
      } else {
        pairs.serve(x);
        for (const traffic::Message& m : rec.sends) CHECK(m.peer % 2 == 0);  // answers go to active ranks only
      }
      CHECK(rec.collectives.empty());
    }
    if (!pairs.active()) pairs.serve_until(steps, x);
    CHECK(max_difference(mean_of(all_vectors(world, x)), before) < 1e-6);
  }
}

TEST_CASE("asynchronous gossip's schedule is a matching: no passive rank gets two requests at one step") {
  const Comm world = Comm::world();
  for (int a = 0; a < world.size(); a += 2)  // the rule the tests read is the one the ranks follow
    for (long step = 0; step < 4; ++step)
      CHECK(PairGossip(world, Topology::exp, 8).peer_of(a, step) ==
            pair_gossip_peer(Topology::exp, world.size(), a, step));
  for (int p : {4, 8, 16})
    for (Topology t : {Topology::ring, Topology::exp, Topology::complete, Topology::torus}) {
      CAPTURE(p);
      CAPTURE(topology_info(t).name);
      for (long step = 0; step < 6; ++step) {
        std::vector<int> taken;
        for (int a = 0; a < p; a += 2) taken.push_back(pair_gossip_peer(t, p, a, step));
        std::sort(taken.begin(), taken.end());
        CHECK(std::adjacent_find(taken.begin(), taken.end()) == taken.end());
      }
    }
}

TEST_CASE("synchronous gossip SGD is x_i <- sum_j W_ij x_j - lr g_i(x_i), against a float64 reference") {
  const Comm world = Comm::world();
  const int p = world.size(), me = world.rank();
  const std::size_t n = 64;
  TrainConfig c;
  c.sync = sync_method("gossip");
  c.sgd.lr = 0.05f;
  for (Topology t : {Topology::ring, Topology::exp1, Topology::torus}) {
    CAPTURE(topology_info(t).name);
    set_gossip_options(c, {.topology = t});
    Sgd sgd(c.sgd, n);
    const std::unique_ptr<Synchronizer> sync = make_synchronizer(c, {world, world, sgd, {}, n, 0});
    CHECK(sync->keeps_replicas());
    std::vector<float> x = values_of(me, n, 1);
    std::vector<std::vector<double>> ref = all_vectors(world, x);
    for (long step = 0; step < 3; ++step) {
      std::vector<float> g = values_of(me, n, 10 + static_cast<int>(step));
      const std::vector<std::vector<double>> grads = all_vectors(world, g);
      sync->observer(x, g);
      sync->step(x, g);
      std::vector<std::vector<double>> next = ref;
      const std::vector<double> w = mixing_matrix(t, p, step);
      for (int i = 0; i < p; ++i)
        for (std::size_t k = 0; k < n; ++k) {
          double mixed = 0;
          for (int j = 0; j < p; ++j)
            mixed += w[static_cast<std::size_t>(i) * p + j] * ref[static_cast<std::size_t>(j)][k];
          next[static_cast<std::size_t>(i)][k] = mixed - c.sgd.lr * grads[static_cast<std::size_t>(i)][k];
        }
      ref = next;
    }
    CHECK(max_abs_difference(x, ref[static_cast<std::size_t>(me)]) < 1e-5);
  }
}

TEST_CASE("local SGD's outer optimizer: outer-lr 1 with momentum 0 is plain averaging bit for bit; otherwise Nesterov") {
  const TrainTest data = test::blobs();
  TrainConfig plain = test::small_mlp("ring", 16, 12);
  plain.average_every = 3;
  plain.quiet = true;
  TrainConfig unit = plain;
  unit.outer_lr = 1.0f;
  unit.outer_momentum = 0.0f;
  const Comm world = Comm::world();
  const TrainResult a = train(plain, data, world), b = train(unit, data, world);
  if (world.rank() == 0) CHECK(a.params == b.params);
  TrainConfig nesterov = plain;
  nesterov.outer_lr = 0.7f;
  nesterov.outer_momentum = 0.9f;
  const TrainResult d = train(nesterov, data, world);
  if (world.rank() == 0) CHECK(d.params != a.params);

  // One worker's view of two averages, against the formula in float64.
  const std::size_t n = 40;
  TrainConfig c;
  c.sync = sync_method("ring");
  c.average_every = 1;
  c.outer_lr = 0.6f;
  c.outer_momentum = 0.5f;
  c.sgd.lr = 0.1f;
  Sgd sgd(c.sgd, n);
  const std::unique_ptr<Synchronizer> sync = make_synchronizer(c, {world, world, sgd, {}, n, 0});
  std::vector<float> x = values_of(0, n);  // every worker starts from one model
  std::vector<double> anchor(x.begin(), x.end()), velocity(n, 0.0);
  for (int step = 0; step < 2; ++step) {
    std::vector<float> g = values_of(world.rank(), n, step + 1);
    std::vector<double> local(n);
    for (std::size_t k = 0; k < n; ++k) local[k] = static_cast<double>(x[k]) - c.sgd.lr * static_cast<double>(g[k]);
    std::vector<float> local_f(local.begin(), local.end());
    const std::vector<double> mean = mean_of(all_vectors(world, local_f));
    for (std::size_t k = 0; k < n; ++k) {
      const double delta = anchor[k] - mean[k];
      velocity[k] = c.outer_momentum * velocity[k] + delta;
      anchor[k] -= c.outer_lr * (delta + c.outer_momentum * velocity[k]);
    }
    sync->step(x, g);
  }
  CHECK(max_abs_difference(x, anchor) < 1e-5);
}

TEST_CASE("train --sync gossip reports the mean model, the consensus distance, the ranks' spread and the gap") {
  const TrainTest data = test::blobs();
  const Comm world = Comm::world();
  for (bool async : {false, true}) {
    CAPTURE(async);
    TrainConfig c = test::small_mlp("gossip", 16, 20);
    set_gossip_options(c, {.topology = Topology::ring, .async = async});
    c.epochs = 2;
    c.quiet = true;
    c.target_accuracy = 0.5;
    REQUIRE(validate(c, world.size()).empty());
    const TrainResult r = train(c, data, world);
    if (world.rank() != 0) continue;
    REQUIRE(r.epochs.size() == 2u);
    for (const EpochReport& e : r.epochs) {
      CHECK(e.consensus_distance >= 0);
      CHECK(e.replica_accuracy_min <= e.replica_accuracy_max);
      CHECK(e.spectral_gap == doctest::Approx(spectral_gap(Topology::ring, world.size())));
      CHECK(e.wire_bytes_per_step > 0);
    }
    CHECK(r.test_accuracy > 0.9);  // four separable blobs
    CHECK(r.target_elapsed_s >= 0);
    CHECK(r.target_steps > 0);
  }
}

TEST_CASE("gossip's flags are refused where they mean nothing, and its refusals say why") {
  using test::check_mentions;
  CHECK_FALSE(parse_train_args({"--sync", "ring", "--topology", "exp"}).config);
  check_mentions(parse_train_args({"--sync", "ring", "--topology", "exp"}).message, {"--topology", "gossip"});
  check_mentions(parse_train_args({"--sync", "ring", "--async"}).message, {"--async", "gossip"});
  check_mentions(parse_train_args({"--sync", "gossip", "--topology", "star"}).message, {"--topology", "star", "ring"});
  check_mentions(parse_train_args({"--sync", "ring", "--outer-lr", "0.5"}).message, {"--outer-lr", "--average-every"});
  const CliOutcome ok = parse_train_args({"--sync", "gossip", "--topology", "exp1", "--async"});
  REQUIRE(ok.config);
  CHECK(ok.config->sync_name() == "gossip-exp1-async");
}

TEST_CASE(
    "a gossip run resumes bit for bit: every rank's own model and momentum come back; other rank counts are "
    "refused") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs(512);
  for (bool async : {false, true}) {
    CAPTURE(async);
    const auto dir = test::temp_dir(async ? "gossip-resume-async" : "gossip-resume", world.rank());
    TrainConfig c = test::checkpointed_mlp("gossip", 8, dir.string());
    set_gossip_options(c, {.topology = Topology::exp1, .async = async});
    c.sgd.momentum = 0.9f;
    const auto [whole, resumed] = test::whole_and_resumed(c, data, world, dir);
    if (world.rank() == 0 && !async) {  // asynchronous pairs average in an order timing decides
      REQUIRE(resumed.epochs.size() == 1u);
      CHECK(resumed.params == whole.params);
      CHECK(resumed.epochs.back().consensus_distance == whole.epochs.back().consensus_distance);
    }
    test::check_replicas_refused_on_one_rank(c, data, world);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("local SGD resumes bit for bit between its averages, with and without its outer optimizer") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs(512);
  for (float outer_lr : {1.0f, 0.7f}) {
    CAPTURE(outer_lr);
    const auto dir = test::temp_dir("local-sgd-resume", world.rank());
    TrainConfig c = test::checkpointed_mlp("ring", 8, dir.string());
    c.average_every = 3;  // 8 steps an epoch: the checkpoint falls between two averages
    c.outer_lr = outer_lr;
    c.outer_momentum = outer_lr == 1.0f ? 0.0f : 0.9f;
    c.sgd.momentum = 0.9f;
    const auto [whole, resumed] = test::whole_and_resumed(c, data, world, dir);
    if (world.rank() == 0) {
      REQUIRE(resumed.epochs.size() == 1u);
      CHECK(resumed.params == whole.params);
      CHECK(resumed.epochs.back().consensus_distance == whole.epochs.back().consensus_distance);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("the cost model prices a gossip step as the model sent to each neighbour over the host's one link") {
  CostModel m;
  m.intra = {1e-6, 1e-10};
  m.inter = {50e-6, 8e-9};
  m.far = {80e-6, 8e-9};
  m.inter_exchange_factor = 1.5;
  const std::size_t n = 1 << 20;
  const double one = m.inter.alpha_s + n * m.inter.beta_s_per_byte;
  // One rank a host: each neighbour is one message of the whole model, one after another on the link.
  CHECK(predict_gossip_step(m, Topology::ring, n, 8, 1, 0, false) == doctest::Approx(2 * one));
  CHECK(predict_gossip_step(m, Topology::torus, n, 16, 1, 0, false) == doctest::Approx(4 * one));
  CHECK(predict_gossip_step(m, Topology::complete, n, 5, 1, 0, false) == doctest::Approx(4 * one));
  CHECK(predict_gossip_step(m, Topology::exp, n, 16, 1, 0, false) == doctest::Approx(7 * one));
  CHECK(predict_gossip_step(m, Topology::exp1, n, 16, 1, false) == doctest::Approx(one));
  // Asynchronous: one pairwise exchange, both directions at once.
  CHECK(predict_gossip_step(m, Topology::ring, n, 8, 1, 0, true) ==
        doctest::Approx(m.inter.alpha_s + 1.5 * n * m.inter.beta_s_per_byte));
  // All on one host: the intra link, the slowest rank's sends.
  CHECK(predict_gossip_step(m, Topology::ring, n, 4, 4, 0, false) ==
        doctest::Approx(m.intra.alpha_s + n * m.intra.beta_s_per_byte));
  // Two ranks a host on a ring of 8: each host sends one model to each neighbouring host.
  CHECK(predict_gossip_step(m, Topology::ring, n, 8, 2, 0, false) == doctest::Approx(2 * one));
  // Hosts under different switches pay the far link.
  m.hosts_per_switch = 2;
  CHECK(predict_gossip_step(m, Topology::ring, n, 8, 1, 0, false) ==
        doctest::Approx(one + m.far.alpha_s + n * m.far.beta_s_per_byte));
  CHECK(predict_gossip_step(m, Topology::ring, 0, 8, 1, 0, false) == 0);
  CHECK(predict_gossip_step(m, Topology::ring, n, 1, 1, 0, false) == 0);
}
