#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "model/mlp.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/loop/data_source.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

constexpr long kEquivalenceSteps = 24;

TrainConfig small_mlp(const std::string& sync, std::size_t batch) {
  return test::small_mlp(sync, batch, kEquivalenceSteps);
}

// Serial SGD with the global batch, computed locally on every rank.
std::vector<float> serial_reference(const TrainTest& data, std::size_t global_batch) {
  const Comm self(MPI_COMM_SELF);
  return train(small_mlp("serial", global_batch), data, self).params;
}

std::vector<float> initial_params(const TrainTest& data, const TrainConfig& c) {
  const std::unique_ptr<Model> model = make_model(c, data.train.features, static_cast<std::size_t>(data.train.classes));
  std::vector<float> p(model->parameter_count());
  model->init(p, c.seed);
  return p;
}

std::vector<float> params_on_all_ranks(const Comm& world, std::vector<float> params, std::size_t n) {
  params.resize(n);
  check_mpi(MPI_Bcast(params.data(), static_cast<int>(n), MPI_FLOAT, 0, world.native()), "MPI_Bcast", world.rank());
  return params;
}

}  // namespace

TEST_CASE("synchronous data parallelism equals serial SGD with the global batch") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const std::size_t b = 4;
  struct Variant {
    std::string sync;
    int servers = 0;
    int average_every = 0;
  };
  for (const Variant& v : {Variant{"ring"}, Variant{"mpi"}, Variant{"ring", 0, 1}, Variant{"ps", 1}, Variant{"ps", 2}}) {
    if (v.servers >= world.size()) continue;
    TrainConfig c = small_mlp(v.sync, b);
    c.average_every = v.average_every;
    if (v.servers) c.servers = v.servers;
    const TrainResult r = train(c, data, world);
    const std::size_t workers = static_cast<std::size_t>(r.workers);
    const std::vector<float> reference = serial_reference(data, workers * b);
    const std::vector<float> got = params_on_all_ranks(world, r.params, reference.size());
    CAPTURE(c.sync_name());
    CHECK(r.steps == kEquivalenceSteps);
    CHECK(test::relative_difference(got, reference) < 1e-5);
    CHECK(test::relative_difference(got, initial_params(data, c)) > 1e-3);  // training moved the model
  }
}

TEST_CASE("train reports the bytes its steps sent: the ring's closed form, and none counted for MPI_Allreduce") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const TrainResult ring = train(small_mlp("ring", 4), data, world);
  const TrainResult mpi = train(small_mlp("mpi", 4), data, world);
  if (world.rank() != 0) return;  // the result is complete on rank 0
  const std::size_t n = initial_params(data, small_mlp("ring", 4)).size();
  std::size_t per_step = 0;  // every rank's sends in one step
  for (int r = 0; r < world.size(); ++r) per_step += traffic::ring_elements_sent(n, world.size(), r) * sizeof(float);
  CHECK(ring.wire_bytes == doctest::Approx(static_cast<double>(per_step * kEquivalenceSteps)));
  REQUIRE(ring.epochs.size() == 1);
  CHECK(ring.epochs[0].wire_bytes_per_step ==
        doctest::Approx(static_cast<double>(per_step) / static_cast<double>(world.size())));
  CHECK(mpi.wire_bytes == -1);
  CHECK(mpi.epochs[0].wire_bytes_per_step == -1);
}

TEST_CASE("sharded parameter servers equal the central server bit for bit in BSP mode") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a sharded or asynchronous parameter server with 2 workers needs 3 ranks");
  const TrainTest data = test::blobs();
  TrainConfig central = small_mlp("ps", 4);
  central.servers = 1;
  central.iterations_per_epoch = TrainConfig::kAuto;  // one pass over the data per epoch
  central.epochs = 2;
  // Same number of workers for both: with 2 servers on 4 ranks there are 2 workers, so use 1 + 2 via a split.
  const int used = 1 + (world.size() - 2);  // central: 1 server + W workers; sharded: 2 servers + W workers
  const Comm central_comm = world.split(world.rank() < used ? 0 : MPI_UNDEFINED, world.rank());
  std::vector<float> a;
  if (central_comm.valid()) a = train(central, data, central_comm).params;
  TrainConfig sharded = central;
  sharded.servers = 2;
  const std::vector<float> b = train(sharded, data, world).params;
  if (world.rank() == 0) {
    REQUIRE(a.size() == b.size());
    CHECK(a == b);
  }
}

TEST_CASE("ASP and SSP apply every gradient exactly once, respect the staleness bound and converge") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a sharded or asynchronous parameter server with 2 workers needs 3 ranks");
  const TrainTest data = test::blobs();
  for (const PsMode mode : {PsMode::asp, PsMode::ssp}) {
    for (int servers : {1, 2}) {
      if (servers + 1 >= world.size() && servers > 1) continue;
      TrainConfig c = small_mlp("ps", 8);
      set_ps_options(c, {.mode = mode, .staleness = 1});
      c.servers = servers;
      c.epochs = 3;
      c.iterations_per_epoch = TrainConfig::kAuto;
      c.faults.straggler_rank = world.size() - 1;  // one slow worker makes the others run ahead
      c.faults.straggler_ms = 0.2;
      const TrainResult r = train(c, data, world);
      if (world.rank() != 0) continue;
      CAPTURE(c.sync_name());
      const long steps = r.steps / c.epochs;
      for (const EpochReport& e : r.epochs) {
        CHECK(e.gradients_applied == doctest::Approx(double(steps * r.workers)));
        if (mode == PsMode::ssp) CHECK(e.clock_gap_max <= ps_options(c).staleness);
        CHECK(e.staleness_max >= 0);
      }
      CHECK(r.test_accuracy > 0.95);
    }
  }
}

TEST_CASE("bad training configurations are rejected with a message naming the flag") {
  TrainConfig c;
  c.sync = sync_method("ps");
  CHECK(validate(c, 1).find("--sync ps needs at least 2 ranks") != std::string::npos);
  c.servers = 4;
  CHECK(validate(c, 4).find("--servers 4") != std::string::npos);
  CHECK(parse_train_args({"--model", "resnet"})
            .message.find("--model: unknown model 'resnet' (choose softmax, mlp, 2nn, cnn)") != std::string::npos);
  CHECK(parse_train_args({"--dataset", "cifar"})
            .message.find("--dataset: unknown dataset 'cifar' (choose mnist, fashion)") != std::string::npos);
  c = TrainConfig{};
  CHECK(validate(c, 2).find("--sync serial runs on one rank") != std::string::npos);
  CHECK(validate(TrainConfig{}, 1).empty());
  c = TrainConfig{};
  c.sync = sync_method("ring");
  c.average_every = 4;
  c.checkpoint_dir = "/tmp/x";
  CHECK(validate(c, 2).empty());  // local SGD checkpoints every worker's own model (tests/test_gossip.cpp)
  c = TrainConfig{};
  c.sync = sync_method("ring-bf16");
  c.average_every = 4;
  CHECK(validate(c, 2).find("--average-every: model averaging needs an exact allreduce method") != std::string::npos);
  c = TrainConfig{};
  c.sync = sync_method("ps");
  c.buckets = true;
  CHECK(validate(c, 2).find("--buckets: needs an allreduce method") != std::string::npos);
  c = TrainConfig{};
  c.pipeline = true;
  CHECK(validate(c, 1).find("--pipeline 1: needs a synchronizing method (ps, ring") != std::string::npos);
  CHECK_THROWS_AS(sync_method("ps-sharded"), std::invalid_argument);  // an allreduce that leaves no sum on every rank
}

TEST_CASE("the train command line turns names into typed choices once, refusing unknown ones by flag and text") {
  struct Refused {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Refused& r : {Refused{{"--sync", "ps-sharded"}, "--sync: unknown method 'ps-sharded' (choose serial, ps"},
                           Refused{{"--sync", "rng"}, "--sync: unknown method 'rng'"},
                           Refused{{"--ps-mode", "eventual"}, "--ps-mode: unknown mode 'eventual'"},
                           Refused{{"--progress", "both"}, "--progress: unknown 'both' (choose calls or thread)"},
                           Refused{{"--straggler", "1:x"}, "--straggler: '1:x' is not RANK:MS"},
                           Refused{{"--inject-pause", "7:1:-1"}, "--inject-pause: '7:1:-1' is not STEP:SECONDS"},
                           Refused{{"--inject-pause", "7:1x"}, "--inject-pause: '7:1x' is not STEP:SECONDS"}}) {
    CAPTURE(r.args[1]);
    const CliOutcome out = parse_train_args(r.args);
    CHECK(!out.config);
    CHECK(out.exit_code == 2);
    CHECK(out.message.find(r.message) != std::string::npos);
  }
  const CliOutcome ps = parse_train_args({"--sync", "ps", "--ps-mode", "ssp", "--staleness", "2", "--servers", "2"});
  REQUIRE(ps.config);
  CHECK(ps.config->sync == sync_method("ps"));
  CHECK(ps_options(*ps.config).mode == PsMode::ssp);
  CHECK(ps.config->sync_name() == "ps-ssp2-k2");
  const CliOutcome ring = parse_train_args({"--sync", "ring", "--pipeline", "1", "--progress", "thread", "--straggler",
                                            "random:5", "--inject-pause", "7:0.5"});
  REQUIRE(ring.config);
  CHECK(ring.config->sync.allreduce == find_allreduce_method("ring"));
  CHECK(ring.config->progress == Progress::thread);
  CHECK(ring.config->sync_name() == "ring-pipe-thread");
  CHECK(ring.config->faults.straggler_rank == FaultInjection::kRandomStraggler);
  CHECK(ring.config->faults.straggler_ms == 5);
  CHECK(ring.config->faults.pause_step == 7);
  CHECK(ring.config->faults.pause_rank == -1);
  const CliOutcome one = parse_train_args({"--sync", "ring", "--inject-pause", "7:600:3"});
  REQUIRE(one.config);
  CHECK(one.config->faults.pause_rank == 3);
  CHECK(validate(one.config->faults, 3, 0).find("--inject-pause: rank 3 is not a worker rank (0..2)") == 0);
  const CliOutcome avg = parse_train_args({"--sync", "mpi", "--average-every", "4"});
  REQUIRE(avg.config);
  CHECK(avg.config->sync_name() == "mpi-avg4");
  const CliOutcome bsp = parse_train_args({"--sync", "ps", "--servers", "2"});
  REQUIRE(bsp.config);
  CHECK(bsp.config->sync_name() == "ps-bsp-k2");
}

TEST_CASE("a flag that would be ignored, or left to a default it has none of, is refused by name before any work") {
  struct Refused {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Refused& r :
       {Refused{{"--sync", "ps", "--ps-mode", "ssp"}, "--ps-mode: ssp needs its bound: --staleness S"},
        Refused{{"--sync", "ring", "--staleness", "3"}, "--staleness: only with --sync ps --ps-mode ssp"},
        Refused{{"--sync", "ps", "--ps-mode", "bsp", "--staleness", "1"},
                "--staleness: only with --sync ps --ps-mode ssp"},
        Refused{{"--sync", "ring", "--ps-mode", "asp"}, "--ps-mode: only with --sync ps (this run's --sync is ring)"},
        Refused{{"--sync", "ring", "--average-every", "0"}, "--average-every: must be >= 1, got 0"},
        Refused{{"--sync", "ring", "--progress", "thread"}, "--progress: thread moves overlapped communication on"},
        Refused{{"--threads", "0"}, "--threads: must be >= 1, got 0"}}) {
    CAPTURE(r.message);
    const CliOutcome out = parse_train_args(r.args);
    CHECK(!out.config);
    CHECK(out.exit_code == 2);
    CHECK(out.message.find(r.message) != std::string::npos);
  }
  CHECK(parse_train_args({"--sync", "ps", "--ps-mode", "ssp", "--staleness", "0"}).config);
  CHECK(parse_train_args({"--sync", "ring", "--average-every", "4"}).config);
  CHECK(parse_train_args({"--sync", "ps", "--pipeline", "1", "--progress", "thread"}).config);
  const CliOutcome help = parse_train_args({"--help"});
  CHECK(help.message.find("default " + default_data_dir(DatasetId::mnist)) != std::string::npos);
  CHECK(help.message.find("Usage: train [OPTIONS]") != std::string::npos);  // the usage line names the program
  CHECK(help.message.find("--rounds INT=5") != std::string::npos);          // and shows a default for each count
}

TEST_CASE("a per-worker batch larger than a worker's share of the training set is refused, naming value and limit") {
  TrainConfig c;
  c.batch = 70000;
  const std::string one = validate_against_data(c, 1, 60000);
  CHECK(one.find("--batch 70000") != std::string::npos);
  CHECK(one.find("60000 images / 1 worker = 60000") != std::string::npos);
  c.batch = 60000;
  CHECK(validate_against_data(c, 1, 60000).empty());  // one step of the whole set is allowed

  c.sync = sync_method("ring");
  c.batch = 15001;
  const std::string four = validate_against_data(c, 4, 60000);
  CHECK(four.find("--batch 15001") != std::string::npos);
  CHECK(four.find("60000 images / 4 workers = 15000") != std::string::npos);
  c.batch = 15000;
  CHECK(validate_against_data(c, 4, 60000).empty());

  // Servers hold no data: only the workers share the set.
  c.sync = sync_method("ps");
  c.servers = 1;
  c.batch = 20001;
  CHECK(validate_against_data(c, 4, 60000).find("60000 images / 3 workers = 20000") != std::string::npos);
  c.batch = 20000;
  CHECK(validate_against_data(c, 4, 60000).empty());
}

TEST_CASE("end to end: data-parallel softmax, one epoch of real MNIST, reaches 90% test accuracy") {
  const Comm world = Comm::world();
  TrainConfig c;
  c.sync = sync_method(world.size() > 1 ? "ring" : "serial");
  c.model = &model_info("softmax");
  c.epochs = 1;
  c.batch = 32 / static_cast<std::size_t>(world.size());
  c.sgd.lr = 0.1f;
  c.iterations_per_epoch = TrainConfig::kAuto;  // one pass over the data, shared by the workers
  c.data_dir = test::mnist_dir();
  const TrainTest mnist = load_idx_dataset(c.data_dir);
  const TrainResult r = train(c, mnist, world);
  if (world.rank() == 0) {
    MESSAGE("MNIST softmax, 1 epoch, " << world.size() << " ranks: test accuracy " << r.test_accuracy);
    CHECK(r.test_accuracy >= 0.90);
  }
}

TEST_CASE("a resumed run reports the throughput of the epochs it trained, not of the whole schedule") {
  const Comm self(MPI_COMM_SELF);  // every rank on its own: a serial run with its own checkpoint directory
  const TrainTest data = test::blobs();
  TrainConfig c = small_mlp("serial", 8);
  c.checkpoint_dir = test::temp_dir("resume-throughput", Comm::world().rank()).string();
  c.epochs = 3;
  const TrainResult first = train(c, data, self);
  c.epochs = 4;
  c.resume = true;
  const TrainResult resumed = train(c, data, self);
  CHECK(first.steps == 3 * kEquivalenceSteps);
  CHECK(resumed.steps == kEquivalenceSteps);  // one epoch left after the checkpoint of epoch 3
  REQUIRE(resumed.wall_s > 0);
  // images/s times the run's own training time gives back the images of the epochs it trained.
  CHECK(resumed.images_per_s * resumed.wall_s ==
        doctest::Approx(static_cast<double>(kEquivalenceSteps * 8)).epsilon(1e-9));
  std::filesystem::remove_all(c.checkpoint_dir);
}

TEST_CASE("ring-bf16 trains like the float32 ring, up to bfloat16 rounding of the gradients") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const TrainResult exact = train(small_mlp("ring", 4), data, world);
  const TrainResult rounded = train(small_mlp("ring-bf16", 4), data, world);
  const std::size_t n = initial_params(data, small_mlp("ring", 4)).size();
  const std::vector<float> a = params_on_all_ranks(world, exact.params, n);
  const std::vector<float> b = params_on_all_ranks(world, rounded.params, n);
  const double gap = test::relative_difference(b, a);
  CAPTURE(gap);
  if (world.size() > 1) CHECK(gap > 0);  // the gradients really went through bf16 (one rank sends nothing)
  CHECK(gap < 2e-3);  // 24 steps of 2^-8-relative gradient rounding stay close to the exact run (4 ranks: 3e-4)
  CHECK(rounded.train_loss == doctest::Approx(exact.train_loss).epsilon(0.02));
}
