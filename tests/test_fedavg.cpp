// Federated averaging: the partitions and the client sampling every rank derives alone, the round's arithmetic against
// synchronous SGD and a float64 reference, the family end to end (reporting, resume) and its flags.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/mlp.hpp"
#include "test_support.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/families/fedavg/client_sampling.hpp"
#include "trainers/families/fedavg/client_update.hpp"
#include "trainers/families/fedavg/partition.hpp"
#include "trainers/loop/trainer.hpp"
#include "trainers/report/report.hpp"

using namespace gradsync;

namespace {

// FNV-1a over the partition: equal on two ranks only if every list is.
std::uint64_t fingerprint(const ClientPartitions& p) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (std::uint32_t e : p.examples) mix(e);
  for (std::size_t s : p.starts) mix(s);
  return h;
}

// Every example 0..n-1 exactly once.
void check_every_example_once(const ClientPartitions& p, std::size_t n) {
  REQUIRE(p.examples.size() == n);
  std::vector<std::uint32_t> sorted = p.examples;
  std::ranges::sort(sorted);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
  CHECK(p.starts.front() == 0u);
  CHECK(p.starts.back() == n);
}

// A fedavg configuration on test::blobs's small MLP: K clients, all of them every round unless the caller changes it.
TrainConfig federated(std::size_t clients, std::size_t batch) {
  TrainConfig c = test::small_mlp("fedavg", batch, 1);
  c.iterations_per_epoch = TrainConfig::kFullPass;
  c.fed.clients = clients;
  c.fed.client_fraction = 1.0;
  c.quiet = true;
  return c;
}

std::vector<float> initial_model(const Model& model, std::uint64_t seed) {
  std::vector<float> x(model.parameter_count());
  model.init(x, seed);
  return x;
}

}  // namespace

TEST_CASE("partitions deal every example exactly once, reproducibly and the same on every rank") {
  const TrainTest data = test::blobs(960);
  const std::span<const std::uint8_t> labels = data.train.labels;
  const Comm world = Comm::world();
  for (const char* text : {"iid", "shards:2", "shards:3", "dirichlet:0.3", "dirichlet:100"}) {
    CAPTURE(text);
    std::string problem;
    const std::optional<PartitionSpec> spec = parse_partition(text, problem);
    REQUIRE(spec);
    CHECK(spec->name() == text);
    const ClientPartitions p = partition_clients(labels, 4, 10, *spec, 5);
    REQUIRE(p.clients() == 10u);
    check_every_example_once(p, labels.size());
    CHECK(fingerprint(partition_clients(labels, 4, 10, *spec, 5)) == fingerprint(p));
    CHECK(fingerprint(partition_clients(labels, 4, 10, *spec, 6)) != fingerprint(p));
    const auto [low, high] = world.min_max(fingerprint(p));
    CHECK(low == high);
    if (spec->kind == PartitionKind::iid)
      for (std::size_t k = 0; k < p.clients(); ++k) CHECK(p.size(k) == 96u);
  }
  std::string problem;
  for (const char* bad : {"shards", "shards:0", "shards:x", "dirichlet:-1", "dirichlet:", "noniid"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_partition(bad, problem));
    test::check_mentions(problem, {bad, "shards:S", "dirichlet:ALPHA"});
  }
}

TEST_CASE("shards:S gives each client exactly S shards of one label each when the classes cut evenly") {
  // 4 classes of 60 examples, 12 clients x 2 shards of 10: every shard lies within one class.
  std::vector<std::uint8_t> labels(240);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::uint8_t>((i * 7) % 4);
  const ClientPartitions p = partition_clients(labels, 4, 12, {PartitionKind::shards, 2, 0}, 9);
  check_every_example_once(p, labels.size());
  std::size_t two_labels = 0;
  for (std::size_t k = 0; k < p.clients(); ++k) {
    const std::span<const std::uint32_t> mine = p.client(k);
    REQUIRE(mine.size() == 20u);
    for (std::size_t shard = 0; shard < 2; ++shard) {
      const std::uint8_t label = labels[mine[shard * 10]];
      for (std::size_t j = 0; j < 10; ++j) CHECK(labels[mine[shard * 10 + j]] == label);
    }
    std::set<std::uint8_t> seen;
    for (std::uint32_t e : mine) seen.insert(labels[e]);
    CHECK(seen.size() <= 2u);
    two_labels += seen.size() == 2 ? 1 : 0;
  }
  CHECK(two_labels > 0);  // the shards are dealt at random, not in label order
}

TEST_CASE("Dirichlet partitions: a small alpha gives each client few labels, a large one nearly all") {
  const TrainTest data = test::blobs(960);
  const auto labels_per_client = [&](double alpha) {
    const ClientPartitions p = partition_clients(data.train.labels, 4, 20, {PartitionKind::dirichlet, 2, alpha}, 3);
    double total = 0;
    for (std::size_t k = 0; k < p.clients(); ++k) {
      std::set<std::uint8_t> seen;
      for (std::uint32_t e : p.client(k)) seen.insert(data.train.labels[e]);
      total += static_cast<double>(seen.size());
    }
    return total / 20;
  };
  CHECK(labels_per_client(0.05) < 2.0);
  CHECK(labels_per_client(100) > 3.9);
}

TEST_CASE("client sampling: m = max(floor(C K), 1) distinct clients a round, the same on every rank") {
  CHECK(clients_per_round(100, 0.1) == 10u);
  CHECK(clients_per_round(100, 0.0) == 1u);
  CHECK(clients_per_round(100, 1.0) == 100u);
  CHECK(clients_per_round(7, 0.5) == 3u);
  const Comm world = Comm::world();
  std::set<std::vector<std::uint32_t>> rounds;
  for (std::int64_t round = 0; round < 20; ++round) {
    const std::vector<std::uint32_t> s = sample_clients(100, 10, 42, round);
    REQUIRE(s.size() == 10u);
    CHECK(std::set<std::uint32_t>(s.begin(), s.end()).size() == 10u);
    for (std::uint32_t k : s) CHECK(k < 100u);
    CHECK(sample_clients(100, 10, 42, round) == s);
    std::uint64_t h = 0;
    for (std::uint32_t k : s) h = h * 131 + k;
    const auto [low, high] = world.min_max(h);
    CHECK(low == high);
    rounds.insert(s);
  }
  CHECK(rounds.size() == 20u);
  // Every sampled client is trained by exactly one worker.
  for (int workers : {1, 3, 4}) {
    std::vector<int> owners(10, 0);
    for (int w = 0; w < workers; ++w)
      for (std::size_t j : my_clients(10, w, workers)) ++owners[j];
    for (int o : owners) CHECK(o == 1);
  }
}

TEST_CASE("FedAvg with C = 1, E = 1, batch all and equal partitions is FedSGD: synchronous full-batch gradient descent") {
  const TrainTest data = test::blobs(960);  // 960 rows: 8 equal clients, and a whole pass on 1 to 4 workers
  const Comm world = Comm::world();
  TrainConfig fed = federated(8, 1);
  fed.fed.full_batch = true;
  fed.epochs = 3;
  REQUIRE(validate(fed, world.size()).empty());
  TrainConfig sync = test::small_mlp("ring", 960 / static_cast<std::size_t>(world.size()), 1);
  sync.epochs = 3;
  sync.quiet = true;
  const TrainResult a = train(fed, data, world), b = train(sync, data, world);
  if (world.rank() == 0) {
    CHECK(test::relative_difference(a.params, b.params) < 1e-5);
    CHECK(a.params != initial_model(Mlp({20, 16, 4}), fed.seed));
  }
}

TEST_CASE("FedAvg with C = 1, equal partitions and one local step is synchronous SGD with batch K*B") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  TrainConfig c = federated(8, 5);
  c.fed.local_steps = 1;
  const TrainResult r = train(c, data, world);
  if (world.rank() != 0) return;
  // The reference: one SGD step on the mean gradient over the 8 clients' first batches, which their own order takes.
  const Mlp model({20, 16, 4});
  std::vector<float> x = initial_model(model, c.seed), g(model.parameter_count());
  const ClientPartitions p = partition_clients(data.train.labels, 4, 8, c.fed.partition, c.seed);
  std::vector<std::uint32_t> batch;
  for (std::uint32_t k = 0; k < 8; ++k) {
    std::vector<std::uint32_t> order(p.size(k));
    client_epoch_order(p.client(k), order, c.seed, 0, k, 0);
    batch.insert(batch.end(), order.begin(), order.begin() + 5);
  }
  Batch b(batch.size(), data.train.features);
  Workspace ws(model, batch.size());
  gather_batch(data.train, batch, b, true);
  model.loss_and_gradient(x, b, g, ws);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] -= c.sgd.lr * g[i];
  CHECK(test::relative_difference(r.params, x) < 1e-5);
}

TEST_CASE("FedAvg weights unequal clients by their example counts, against a float64 reference") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  TrainConfig c = federated(6, 1);
  c.fed.partition = {PartitionKind::dirichlet, 2, 0.5};
  c.fed.full_batch = true;
  c.fed.local_steps = 1;
  const TrainResult r = train(c, data, world);
  if (world.rank() != 0) return;
  const Mlp model({20, 16, 4});
  const std::vector<float> x0 = initial_model(model, c.seed);
  const ClientPartitions p = partition_clients(data.train.labels, 4, 6, c.fed.partition, c.seed);
  std::vector<double> mean(x0.size(), 0.0);
  std::set<std::size_t> sizes;
  std::vector<float> g(model.parameter_count());
  for (std::size_t k = 0; k < 6; ++k) {
    sizes.insert(p.size(k));
    if (p.size(k) == 0) continue;
    Batch b(p.size(k), data.train.features);
    Workspace ws(model, p.size(k));
    gather_batch(data.train, p.client(k), b, true);
    model.loss_and_gradient(x0, b, g, ws);
    const double w = static_cast<double>(p.size(k)) / 960.0;
    for (std::size_t i = 0; i < x0.size(); ++i) mean[i] += w * (static_cast<double>(x0[i]) - c.sgd.lr * g[i]);
  }
  REQUIRE(sizes.size() > 2);  // the clients really are unequal
  double worst = 0;
  for (std::size_t i = 0; i < mean.size(); ++i) worst = std::max(worst, std::abs(r.params[i] - mean[i]));
  CHECK(worst < 1e-6);
}

TEST_CASE("train --sync fedavg reports each round's accuracy, the best so far, its bytes and the rounds to a target") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  TrainConfig c = federated(20, 8);
  c.fed.client_fraction = 0.2;
  c.fed.partition = {PartitionKind::shards, 2, 0};
  c.epochs = 6;
  c.target_accuracy = 0.6;
  const TrainResult r = train(c, data, world);
  c.stop_at_target = true;  // the same run again, ended by the round that reached the target
  const TrainResult stopped = train(c, data, world);
  if (world.rank() != 0) return;  // the report is rank 0's
  REQUIRE(r.epochs.size() == 6u);
  double best = 0;
  for (const EpochReport& e : r.epochs) {
    best = std::max(best, e.test_accuracy);
    CHECK(e.round);
    CHECK(e.best_accuracy == best);
    CHECK(e.global_steps == e.epoch);  // a step is a round
    if (world.size() > 1) CHECK(e.wire_bytes_per_step > 0);
  }
  REQUIRE(r.target_steps > 0);
  CHECK(r.rounds);
  const auto first = std::ranges::find_if(r.epochs, [&](const EpochReport& e) { return e.best_accuracy >= 0.6; });
  REQUIRE(first != r.epochs.end());
  CHECK(r.target_steps <= first->epoch);
  CHECK(r.target_steps > first->epoch - 1);
  test::check_mentions(format_target(r), {"rounds to 0.6: "});
  test::check_mentions(format_epoch(r.epochs.front()), {"round 1/6", "best"});
  if (world.size() > 1) test::check_mentions(format_epoch(r.epochs.front()), {"KB/round"});
  REQUIRE(first->epoch < 6);  // else stopping early checks nothing
  CHECK(stopped.epochs.size() == static_cast<std::size_t>(first->epoch));
  CHECK(stopped.target_steps == r.target_steps);
  CHECK(stopped.params.size() == r.params.size());
  c.target_accuracy = 0;
  test::check_mentions(validate(c, world.size()), {"--stop-at-target", "--target-accuracy"});
}

TEST_CASE("a federated run resumes at a round bit for bit, drawing the same clients afterwards") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  for (float server_momentum : {0.0f, 0.9f}) {
    CAPTURE(server_momentum);
    const auto dir = test::temp_dir("fedavg-resume", world.rank());
    TrainConfig c = federated(12, 8);
    c.fed.client_fraction = 0.25;
    c.fed.partition = {PartitionKind::dirichlet, 2, 0.5};
    c.outer_momentum = server_momentum;
    c.checkpoint_dir = dir.string();
    const auto [whole, resumed] = test::whole_and_resumed(c, data, world, dir, 4);
    if (world.rank() == 0) {
      REQUIRE(resumed.epochs.size() == 2u);
      CHECK(resumed.params == whole.params);
      CHECK(resumed.epochs.back().test_accuracy == whole.epochs.back().test_accuracy);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("train --help shows --rounds' default, the rounds a federated run takes without it") {
  const std::string help = parse_train_args({"--help"}).message;
  const std::size_t at = help.find("  --rounds");
  REQUIRE(at != std::string::npos);
  const std::string line = help.substr(at, help.find('\n', at) - at);
  CHECK_MESSAGE(line.find(fmt::format("={}", TrainConfig{}.epochs)) != std::string::npos, line);
  const CliOutcome plain = parse_train_args({"--sync", "fedavg"});
  REQUIRE(plain.config);
  CHECK(plain.config->epochs == TrainConfig{}.epochs);
}

TEST_CASE("fedavg's flags are refused where they mean nothing, and its refusals say why") {
  using test::check_mentions;
  check_mentions(parse_train_args({"--sync", "ring", "--clients", "10"}).message, {"--clients", "fedavg"});
  check_mentions(parse_train_args({"--sync", "ring", "--batch", "all"}).message, {"--batch", "fedavg"});
  check_mentions(parse_train_args({"--sync", "fedavg", "--epochs", "3"}).message, {"--epochs", "--rounds"});
  check_mentions(parse_train_args({"--sync", "fedavg", "--partition", "shards:0"}).message, {"--partition", "shards:0"});
  check_mentions(parse_train_args({"--sync", "fedavg", "--aggregate", "nope"}).message, {"--aggregate", "nope", "ring"});
  check_mentions(parse_train_args({"--sync", "fedavg", "--local-steps", "2", "--local-epochs", "2"}).message,
                 {"--local-steps", "--local-epochs"});
  const CliOutcome ok =
      parse_train_args({"--sync", "fedavg", "--rounds", "7", "--batch", "all", "--partition", "shards:2", "--clients",
                        "50", "--client-fraction", "0.2", "--aggregate", "ps"});
  REQUIRE(ok.config);
  CHECK(ok.config->epochs == 7);
  CHECK(ok.config->fed.full_batch);
  CHECK(ok.config->sync_name() == "fedavg-K50-C0.2-E1-Ball-shards:2-ps");
  TrainConfig c = *ok.config;
  CHECK(validate(c, 4).empty());
  c.sgd.momentum = 0.9f;
  check_mentions(validate(c, 4), {"--momentum", "--outer-momentum"});
  c.sgd.momentum = 0;
  c.fed.aggregate = find_allreduce_method("ring-bf16");
  check_mentions(validate(c, 4), {"--aggregate ring-bf16", "exact"});
  c.fed.aggregate = find_allreduce_method("ring");
  c.fed.clients = 40000;
  check_mentions(validate_against_data(c, 4, 60000), {"--clients 40000", "shards:2", "80000"});
}
