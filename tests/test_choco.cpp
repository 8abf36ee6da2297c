// Gossip with compression (CHOCO-SGD, trainers/families/gossip/choco_gossip.cpp): its arithmetic against D-PSGD and
// against its invariants, its traffic, its checkpoints and its refusals. Written for any number of ranks.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/topology.hpp"
#include "compression/compressors.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/core/divergence.hpp"
#include "trainers/families/gossip/gossip_options.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// One layer of 17 x 58 weights and 17 biases: 1003 parameters in two tensors (sign scales each on its own).
const std::vector<LayerShape> kLayers = {{0, 17, 58}};
constexpr std::size_t kCount = 17 * 58 + 17;

using test::values_of;

// The ranks' mean of `mine`, summed in double.
std::vector<double> mean_of(const Comm& comm, std::span<const float> mine) {
  const std::vector<float> all = comm.all_gather(mine);
  std::vector<double> mean(mine.size(), 0.0);
  for (std::size_t i = 0; i < all.size(); ++i) mean[i % mine.size()] += all[i] / static_cast<double>(comm.size());
  return mean;
}

// (1/p) sum_i ||x_i - mean||^2, in double, the same on every rank.
double consensus_distance(const Comm& comm, std::span<const float> mine) {
  const std::vector<double> mean = mean_of(comm, mine);
  double own = 0;
  for (std::size_t k = 0; k < mine.size(); ++k) own += (mine[k] - mean[k]) * (mine[k] - mean[k]);
  return comm.sum(own) / comm.size();
}

double largest_gap(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
  return worst;
}

// A gossip configuration on `topology`; compressed with `compress` (NAME[:PARAM]) unless it is empty.
TrainConfig gossip_config(Topology topology, const std::string& compress, float gamma, float lr, float momentum) {
  TrainConfig c;
  c.sync = sync_method("gossip");
  set_gossip_options(c, {.topology = topology, .gamma = gamma});
  c.sgd.lr = lr;
  c.sgd.momentum = momentum;
  if (!compress.empty()) {
    std::string problem;
    c.compression = *parse_compression(compress, problem);
  }
  return c;
}

// Steps of a synchronizer from `x` with zero gradients: the exchange alone.
void mix_only(Synchronizer& sync, std::vector<float>& x, int steps) {
  std::vector<float> zero(x.size(), 0.0f);
  for (int step = 0; step < steps; ++step) {
    sync.observer(x, zero);
    sync.step(x, zero);
  }
}

}  // namespace

// With q = Q(x - xhat) = x - xhat exactly (top-k keeping every entry), every public copy becomes its model after the
// exchange, xhat_j = x_j, so x_i + 1 * sum_j w_ij (xhat_j - xhat_i) = sum_j w_ij x_j: D-PSGD's mix, followed by the
// same optimizer step. Only rounding differs (xhat + (x - xhat) is x to an ulp, and d_i is accumulated).
TEST_CASE("choco: top-k keeping every entry with gamma 1 is D-PSGD step for step") {
  const Comm world = Comm::world();
  for (Topology t : {Topology::ring, Topology::torus, Topology::complete}) {
    CAPTURE(topology_info(t).name);
    const TrainConfig plain = gossip_config(t, "", 1.0f, 0.05f, 0.9f);
    const TrainConfig choco = gossip_config(t, "topk:1", 1.0f, 0.05f, 0.9f);
    Sgd sgd_plain(plain.sgd, kCount), sgd_choco(choco.sgd, kCount);
    const auto a = make_synchronizer(plain, {world, world, sgd_plain, kLayers, kCount, 0});
    const auto b = make_synchronizer(choco, {world, world, sgd_choco, kLayers, kCount, 0});
    std::vector<float> x = values_of(world.rank(), kCount, 1), y = x;
    double worst = 0;
    for (int step = 0; step < 6; ++step) {
      std::vector<float> g = values_of(world.rank(), kCount, 10 + step), h = g;
      a->observer(x, g);
      a->step(x, g);
      b->observer(y, h);
      b->step(y, h);
      for (std::size_t k = 0; k < kCount; ++k) worst = std::max(worst, std::abs(double(x[k]) - y[k]));
    }
    CHECK(worst < 1e-5);
    if (world.size() > 1) CHECK(consensus_distance(world, y) > 0);  // the ranks' models differ: not a trivial match
  }
}

// sum_i x_i changes by gamma w sum_i d_i = gamma w sum_i sum_{j in N(i)} (xhat_j - xhat_i) = 0 on a symmetric graph
// whose ranks share one weight, whatever the compressor sent: every q_j enters d at each of j's neighbours and
// -degree times at j.
TEST_CASE("choco: with zero gradient the ranks' mean model stays where it was, for top-k and sign (float64 mean)") {
  const Comm world = Comm::world();
  for (const char* compress : {"topk:0.1", "sign"}) {
    for (Topology t : {Topology::ring, Topology::exp}) {
      CAPTURE(compress);
      CAPTURE(topology_info(t).name);
      const TrainConfig c = gossip_config(t, compress, 0.2f, 0.1f, 0.0f);
      Sgd sgd(c.sgd, kCount);
      const auto sync = make_synchronizer(c, {world, world, sgd, kLayers, kCount, 0});
      std::vector<float> x = values_of(world.rank(), kCount, 2);
      sync->start_from(x);  // models that differ: the public copies start at zero
      const std::vector<double> before = mean_of(world, x);
      const double apart = consensus_distance(world, x);
      mix_only(*sync, x, 20);
      // Values below 1 in magnitude: 20 steps of a few float roundings (3e-8 each) on each rank.
      CHECK(largest_gap(mean_of(world, x), before) < 2e-6);
      if (world.size() > 1) CHECK(consensus_distance(world, x) < 0.9 * apart);  // the models did move
    }
  }
}

TEST_CASE("choco: with zero gradient and top-k 10 % the ranks agree, to float rounding, within 400 steps") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "needs two ranks to disagree");
  const TrainConfig c = gossip_config(Topology::ring, "topk:0.1", 0.2f, 0.1f, 0.0f);
  Sgd sgd(c.sgd, kCount);
  const auto sync = make_synchronizer(c, {world, world, sgd, kLayers, kCount, 0});
  std::vector<float> x = values_of(world.rank(), kCount, 3);
  sync->start_from(x);
  const double apart = consensus_distance(world, x);
  mix_only(*sync, x, 400);
  CHECK(consensus_distance(world, x) < 1e-9 * apart);
}

// From one model x0 every public copy starts at x0, so once each rank has stepped to x0 + delta_i (delta_i on fewer
// entries than top-k keeps), the next part is delta_i itself and, with gamma 1, the exchange is D-PSGD's mix of the
// x0 + delta_j. Copies started at zero would send x0's largest entries instead, and delta would not move.
TEST_CASE("choco: from one starting model the public copies start there, and the first parts carry the updates") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "needs two ranks to mix");
  const int p = world.size(), me = world.rank();
  const TrainConfig c = gossip_config(Topology::ring, "topk:0.05", 1.0f, 0.5f, 0.0f);
  Sgd sgd(c.sgd, kCount);
  const auto sync = make_synchronizer(c, {world, world, sgd, kLayers, kCount, 0});
  std::vector<float> x = values_of(0, kCount, 6), g(kCount, 0.0f);  // one model on every rank
  sync->start_from(x);
  std::vector<std::vector<double>> ref(static_cast<std::size_t>(p), std::vector<double>(x.begin(), x.end()));
  for (int r = 0; r < p; ++r)
    for (std::size_t k = 0; k < 10; ++k) {  // rank r's update: 10 entries, 1e-3 in size
      const std::size_t at = 37 * k + 5 * static_cast<std::size_t>(r);
      const float step = 1e-3f * static_cast<float>(r + 1) * (k % 2 ? 1.0f : -1.0f);
      if (r == me) g[at] = -step / c.sgd.lr;
      ref[static_cast<std::size_t>(r)][at] = static_cast<double>(x[at] + step);
    }
  sync->observer(x, g);  // every copy is x0: the parts are zero, and the step moves x to x0 + delta
  sync->step(x, g);
  std::fill(g.begin(), g.end(), 0.0f);
  mix_only(*sync, x, 1);
  const std::vector<double> w = mixing_matrix(Topology::ring, p, 0);
  double worst = 0;
  for (std::size_t k = 0; k < kCount; ++k) {
    double mixed = 0;
    for (int j = 0; j < p; ++j) mixed += w[static_cast<std::size_t>(me * p + j)] * ref[static_cast<std::size_t>(j)][k];
    worst = std::max(worst, std::abs(mixed - x[k]));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("choco: a diverged model is refused before it is compressed, on the rank that holds it") {
  const Comm world = Comm::world();
  for (const char* compress : {"topk:0.1", "sign"}) {
    CAPTURE(compress);
    const TrainConfig c = gossip_config(Topology::ring, compress, 0.4f, 0.1f, 0.0f);
    Sgd sgd(c.sgd, kCount);
    const auto sync = make_synchronizer(c, {world, world, sgd, kLayers, kCount, 0});
    std::vector<float> x = values_of(world.rank(), kCount, 5), g(kCount, 0.0f);
    x[kCount / 2] = std::nanf("");  // on every rank: each refuses before it posts a message
    CHECK_THROWS_AS(sync->observer(x, g), DivergenceError);
  }
}

TEST_CASE("choco: a step sends the compressor's part to each neighbour and nothing else; train counts those bytes") {
  const Comm world = Comm::world();
  for (const char* compress : {"topk:0.1", "sign"}) {
    CAPTURE(compress);
    const TrainConfig c = gossip_config(Topology::ring, compress, 0.4f, 0.1f, 0.0f);
    const std::size_t part_bytes =
        c.compression.compressor->make_codec(c.compression.param, model_tensors(kLayers))->words() * 4;
    Sgd sgd(c.sgd, kCount);
    const auto sync = make_synchronizer(c, {world, world, sgd, kLayers, kCount, 0});
    std::vector<float> x = values_of(world.rank(), kCount, 4), g(kCount, 0.0f);
    std::vector<int> expected;
    for (const Peer& peer : neighbourhood(Topology::ring, world.size(), world.rank(), 0).peers)
      expected.push_back(peer.rank);
    for (int step = 0; step < 2; ++step) {
      traffic::Recording rec;
      sync->observer(x, g);
      sync->step(x, g);
      CHECK(rec.send_peers() == expected);
      CHECK(rec.receive_peers() == expected);
      CHECK(rec.sends.size() == expected.size());
      for (const traffic::Message& m : rec.sends) CHECK(m.bytes == part_bytes);
      CHECK(rec.collectives.empty());
    }
  }
  // The same count through train's wire counter, on the small MLP's tensors.
  const TrainTest data = test::blobs();
  TrainConfig c = test::small_mlp("gossip", 16, 12);
  c.compression = gossip_config(Topology::ring, "topk:0.1", 0.4f, 0.1f, 0.0f).compression;
  c.quiet = true;
  REQUIRE(validate(c, world.size()).empty());
  const TrainResult r = train(c, data, world);
  if (world.rank() != 0) return;
  const std::unique_ptr<Model> model = make_model(c, data.train.features, static_cast<std::size_t>(data.train.classes));
  const std::size_t words = c.compression.compressor->make_codec(0.1, model_tensors(model->layers()))->words();
  const std::size_t degree = neighbourhood(Topology::ring, world.size(), 0, 0).peers.size();
  REQUIRE(r.epochs.size() == 1u);
  CHECK(r.epochs[0].wire_bytes_per_step == static_cast<double>(words * 4 * degree));
}

TEST_CASE("choco: train --sync gossip --compress reports what gossip reports, and learns") {
  const TrainTest data = test::blobs();
  const Comm world = Comm::world();
  for (const char* compress : {"topk:0.1", "sign"}) {
    CAPTURE(compress);
    TrainConfig c = test::small_mlp("gossip", 16, 20);
    c.compression = gossip_config(Topology::ring, compress, 0.4f, 0.1f, 0.0f).compression;
    c.epochs = 2;
    c.quiet = true;
    REQUIRE(validate(c, world.size()).empty());
    const TrainResult r = train(c, data, world);
    if (world.rank() != 0) continue;
    CHECK(r.sync_name == fmt::format("gossip-ring-{}", c.compression.name()));
    REQUIRE(r.epochs.size() == 2u);
    for (const EpochReport& e : r.epochs) {
      CHECK(e.consensus_distance >= 0);
      CHECK(e.replica_accuracy_min <= e.replica_accuracy_max);
      CHECK(e.spectral_gap == doctest::Approx(spectral_gap(Topology::ring, world.size())));
    }
    CHECK(r.test_accuracy > 0.9);  // four separable blobs
  }
}

TEST_CASE("choco: a run resumes bit for bit, public copies included; other rank counts are refused") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("choco-resume", world.rank());
  TrainConfig c = test::checkpointed_mlp("gossip", 8, dir.string());
  c.compression = gossip_config(Topology::ring, "topk:0.25", 0.4f, 0.1f, 0.0f).compression;
  c.sgd.momentum = 0.9f;
  const auto [whole, resumed] = test::whole_and_resumed(c, data, world, dir);
  if (world.rank() == 0) {
    REQUIRE(resumed.epochs.size() == 1u);
    CHECK(resumed.params == whole.params);
    CHECK(resumed.epochs.back().consensus_distance == whole.epochs.back().consensus_distance);
  }
  test::check_replicas_refused_on_one_rank(c, data, world);
  std::filesystem::remove_all(dir);
}

TEST_CASE("choco: what CHOCO-SGD cannot take is refused, saying why") {
  using test::check_mentions;
  const auto refusal = [](std::vector<std::string> args, int ranks) {
    const CliOutcome parsed = parse_train_args(std::move(args));
    return parsed.config ? validate(*parsed.config, ranks) : parsed.message;
  };
  CHECK(refusal({"--sync", "gossip", "--compress", "topk:0.01"}, 4).empty());
  CHECK(refusal({"--sync", "gossip", "--topology", "torus", "--compress", "sign", "--gossip-gamma", "0.5"}, 4).empty());
  check_mentions(refusal({"--sync", "gossip", "--compress", "powersgd:2"}, 4), {"--compress", "allreduce", "topk"});
  check_mentions(refusal({"--sync", "gossip", "--async", "--compress", "sign"}, 4), {"--async", "public copies"});
  check_mentions(refusal({"--sync", "gossip", "--compress", "sign", "--error-feedback", "1"}, 4),
                 {"--error-feedback", "residual"});
  check_mentions(refusal({"--sync", "gossip", "--topology", "exp1", "--compress", "sign"}, 4),
                 {"--topology exp1", "change from step to step", "ring"});
  CHECK(refusal({"--sync", "gossip", "--topology", "exp1", "--compress", "sign"}, 2).empty());  // one fixed peer
  check_mentions(refusal({"--sync", "gossip", "--gossip-gamma", "0.5"}, 4), {"--gossip-gamma", "--compress"});
  check_mentions(refusal({"--sync", "ring", "--gossip-gamma", "0.5"}, 4), {"--gossip-gamma", "--sync gossip"});
  check_mentions(refusal({"--sync", "gossip", "--compress", "sign", "--gossip-gamma", "1.5"}, 4),
                 {"--gossip-gamma", "(0, 1]"});
  const CliOutcome named = parse_train_args({"--sync", "gossip", "--compress", "topk:0.01", "--gossip-gamma", "0.2"});
  REQUIRE(named.config);
  CHECK(named.config->sync_name() == "gossip-ring-g0.2-topk0.01");
}
