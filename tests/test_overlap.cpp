// Overlapping communication with computation changes when bytes move, not what is computed: bucketed backward
// gives the blocking path's model, and pipelined SGD gives exactly serial SGD with each update one step late.
#include <doctest/doctest.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/loop/trainer.hpp"
#include "trainers/overlap/comm_engine.hpp"
#include "trainers/overlap/gradient_jobs.hpp"

using namespace gradsync;

namespace {

constexpr long kSteps = 12;

// Three layers, so that buckets can split the gradient at two boundaries, the first of 40 rows, which 1-byte buckets
// cut between rows (two pieces of kMinBucketRows or more).
TrainConfig small_mlp(const std::string& sync, std::size_t batch) {
  TrainConfig c = test::small_mlp(sync, batch, kSteps);
  c.hidden = {40, 12};
  c.epochs = 2;
  c.sgd.momentum = 0.5f;
  return c;
}

std::vector<float> on_all_ranks(const Comm& comm, std::vector<float> params, std::size_t n) {
  params.resize(n);
  check_mpi(MPI_Bcast(params.data(), static_cast<int>(n), MPI_FLOAT, 0, comm.native()), "MPI_Bcast", comm.rank());
  return params;
}

// Serial SGD with the global batch in which every update applies the gradient of the step before (Pipe-SGD):
// the update of step t uses the gradient computed on the parameters of step t-1, and each epoch ends by applying
// its last gradient. What --pipeline 1 must compute on any number of workers.
std::vector<float> one_step_late_reference(const TrainConfig& c, const TrainTest& data, std::size_t global_batch) {
  const std::unique_ptr<Model> owned = make_model(c, data.train.features, static_cast<std::size_t>(data.train.classes));
  const Model& model = *owned;
  std::vector<float> params(model.parameter_count()), grads(params.size()), pending(params.size());
  model.init(params, c.seed);
  Sgd sgd(c.sgd, params.size());
  Workspace ws(model, global_batch);
  Batch batch(global_batch, data.train.features);
  std::vector<std::uint32_t> perm(data.train.rows), slice(global_batch);
  for (int epoch = 0; epoch < c.epochs; ++epoch) {
    shuffled_indices(perm, c.seed, static_cast<std::uint64_t>(epoch));
    bool have_pending = false;
    for (long s = 0; s < kSteps; ++s) {
      for (std::size_t j = 0; j < global_batch; ++j)
        slice[j] = perm[(static_cast<std::size_t>(s) * global_batch + j) % data.train.rows];
      gather_batch(data.train, slice, batch);
      model.loss_and_gradient(params, batch, grads, ws);
      if (have_pending) sgd.step(params, pending);
      std::swap(grads, pending);
      have_pending = true;
    }
    sgd.step(params, pending);
  }
  return params;
}

std::vector<float> serial_reference(const TrainConfig& c, const TrainTest& data, std::size_t global_batch) {
  TrainConfig serial = c;
  serial.sync = sync_method("serial");
  serial.pipeline = false;
  serial.servers = 1;
  serial.batch = global_batch;
  return train(serial, data, Comm(MPI_COMM_SELF)).params;
}

}  // namespace

TEST_CASE("bucketed backward: the blocking path's bits on two ranks, its model to rounding on more") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const Comm pair = world.split(world.rank() / 2, world.rank());
  for (const Comm* comm : {&pair, &world}) {
    for (const std::string sync : {"ring", "mpi"}) {
      TrainConfig blocking = small_mlp(sync, 4);
      const std::vector<float> reference = train(blocking, data, *comm).params;
      // 1 byte: every layer its own bucket; the default: fewer, larger ones.
      for (std::size_t bucket_bytes : {std::size_t{1}, TrainConfig::kDefaultBucketBytes}) {
        for (const Progress progress : {Progress::calls, Progress::thread}) {
          TrainConfig bucketed = blocking;
          bucketed.buckets = true;
          bucketed.bucket_bytes = bucket_bytes;
          bucketed.progress = progress;
          const TrainResult r = train(bucketed, data, *comm);
          CAPTURE(comm->size());
          CAPTURE(bucketed.sync_name());
          CAPTURE(bucket_bytes);
          if (comm->rank() != 0) continue;
          REQUIRE(r.params.size() == reference.size());
          if (comm->size() <= 2)
            CHECK(r.params == reference);
          else
            CHECK(test::relative_difference(r.params, reference) < 1e-5);
          CHECK(r.hidden_s >= 0);
        }
      }
    }
  }
}

TEST_CASE("pipelined SGD equals serial SGD that applies each gradient one step late") {
  const Comm world = Comm::world();
  const TrainTest data = test::blobs();
  const std::size_t b = 4;
  struct Variant {
    std::string sync;
    int servers = 1;
  };
  for (const Variant& v : {Variant{"ring"}, Variant{"mpi"}, Variant{"ps", 1}, Variant{"ps", 2}}) {
    if (v.sync == "ps" && v.servers >= world.size()) continue;
    for (const Progress progress : {Progress::calls, Progress::thread}) {
      TrainConfig c = small_mlp(v.sync, b);
      c.servers = v.servers;
      c.pipeline = true;
      c.progress = progress;
      const TrainResult r = train(c, data, world);
      const std::size_t global = static_cast<std::size_t>(c.worker_count(world.size())) * b;
      const std::vector<float> late = one_step_late_reference(c, data, global);
      const std::vector<float> got = on_all_ranks(world, r.params, late.size());
      CAPTURE(c.sync_name());
      CHECK(test::relative_difference(got, late) < 1e-5);
      // Not vacuous: one step of delay is a different trajectory from synchronous SGD.
      CHECK(test::relative_difference(got, serial_reference(c, data, global)) > 1e-3);
    }
  }
}

TEST_CASE("the engine starts the next job's part ahead while the head is in flight, and the job itself in order") {
  struct Job final : CommJob {
    std::vector<std::string>* log;
    std::string name;
    int polls_to_finish;
    Job(std::vector<std::string>* l, std::string n, int polls) : log(l), name(std::move(n)), polls_to_finish(polls) {}
    void start() override { log->push_back(name + " start"); }
    bool test() override { return --polls_to_finish <= 0; }
    void wait() override { polls_to_finish = 0; }
    void start_ahead() override { log->push_back(name + " ahead"); }
    void test_ahead() override { log->push_back(name + " test ahead"); }
  };
  std::vector<std::string> log;
  Job a(&log, "a", 3), b(&log, "b", 2), c(&log, "c", 1);
  CommEngine engine(Progress::calls, 3);
  for (Job* j : {&a, &b, &c}) engine.enqueue(*j);
  engine.poll();  // a starts, is in flight: b goes ahead
  engine.poll();  // a still in flight: b's part ahead is moved on
  engine.poll();  // a completes; b starts and is in flight: c goes ahead
  engine.wait_all();
  const std::vector<std::string> expected = {"a start", "b ahead", "b test ahead", "b start", "c ahead", "c start"};
  CHECK(log == expected);

  // Announced jobs (buckets whose gradient is not computed yet): only the part ahead runs until ready().
  log.clear();
  Job d(&log, "d", 2), e(&log, "e", 1);
  engine.announce(d);
  engine.announce(e);
  engine.poll();  // d may not start: its part ahead does
  engine.poll();
  CHECK_THROWS_AS(engine.wait_all(), std::logic_error);  // nothing would ever make d ready
  engine.ready();
  engine.poll();  // d starts and is in flight: e goes ahead though it is not ready
  engine.poll();  // d completes; e may not start
  engine.ready();
  engine.wait_all();
  CHECK_THROWS_AS(engine.ready(), std::logic_error);  // nothing announced
  const std::vector<std::string> announced = {"d ahead", "d test ahead", "d start", "e ahead", "e test ahead", "e start"};
  CHECK(log == announced);
}

TEST_CASE("buckets end at layer starts, and with the layer sizes also between the rows of a large layer") {
  const Mlp model({784, 1024, 1024, 10});
  const std::vector<LayerShape>& layers = model.layers();
  std::vector<std::size_t> offsets;
  for (const LayerShape& l : layers) offsets.push_back(l.offset);
  const std::size_t count = model.parameter_count();
  const auto row_start = [&](std::size_t at) {  // at a layer's start or between two rows of its weights
    for (const LayerShape& l : layers)
      if (at >= l.offset && at < l.bias_offset()) return (at - l.offset) % l.inputs == 0;
    return false;
  };
  for (const std::size_t bucket_bytes : {std::size_t{1}, std::size_t{1} << 20, std::size_t{64} << 20}) {
    for (const bool rows : {false, true}) {
      const std::vector<ElementRange> b = bucket_ranges(bucket_bytes, layers, count, rows);
      CAPTURE(bucket_bytes);
      CAPTURE(rows);
      REQUIRE(!b.empty());
      CHECK(b.front().end == count);
      CHECK(b.back().begin == 0);
      std::size_t in_first_layer = 0;
      for (std::size_t i = 0; i < b.size(); ++i) {
        if (i > 0) CHECK(b[i].end == b[i - 1].begin);  // they tile the gradient, output layer first
        CHECK(row_start(b[i].begin));
        if (!rows) CHECK(std::find(offsets.begin(), offsets.end(), b[i].begin) != offsets.end());
        if (i + 1 < b.size()) CHECK(b[i].size() * sizeof(float) >= bucket_bytes);
        in_first_layer += b[i].end <= offsets[1];
      }
      // The input layer's 3.1 MiB of weights: 3 pieces of 1 MiB, 64 of kMinBucketRows with 1 byte, one without the
      // sizes; 64 MiB is one bucket for the whole model.
      const std::size_t expected = bucket_bytes > (std::size_t{4} << 20) ? 0 : !rows ? 1 : bucket_bytes == 1 ? 64 : 3;
      CHECK(in_first_layer == expected);
    }
  }
}

TEST_CASE("an observed pass computes the unobserved pass's bits, with progress points inside long kernels") {
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
  // Big enough that every GEMM of the pass is cut into several row blocks.
  const Dataset data = make_blobs(512, 512, 10, 0.3f, 5, 0);
  const Mlp model({512, 512, 10});
  std::vector<float> params(model.parameter_count()), plain(params.size()), observed(params.size());
  model.init(params, 1);
  Workspace ws(model, 512);
  Batch batch(512, data.features);
  std::vector<std::uint32_t> all(512);
  for (std::uint32_t i = 0; i < 512; ++i) all[i] = i;
  gather_batch(data, all, batch);
  const float a = model.loss_and_gradient(params, batch, plain, ws);
  Counter counter;
  counter.ready_from = model.parameter_count();
  const float b = model.loss_and_gradient(params, batch, observed, ws, &counter);
  CHECK(a == b);
  CHECK(plain == observed);
  CHECK(counter.contiguous);       // from the end down, each element once
  CHECK(counter.ready_from == 0);  // the whole gradient was reported
  CHECK(counter.calls > 3);        // more progress points than the 3 between whole kernels
  CHECK(counter.reports > 4);      // the input layer's weights in more than one piece (2 layers x (W, b) otherwise)
}
