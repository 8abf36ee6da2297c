// The CNN in data-parallel training: every sync family trains it, the synchronous ones equal to serial SGD with the
// global batch, and its kernel plan is rank 0's on every rank, so that every rank computes the same bits (the MLP's
// cases: tests/test_training.cpp, tests/test_kernel_plan.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "compression_support.hpp"
#include "model/cnn.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

constexpr long kCnnSteps = 16;

// Four classes of 8x8 generated images: the CNN of --model cnn (32 and 64 channels, 512 hidden) on them has 185,732
// parameters and a step of milliseconds.
TrainTest cnn_images() { return {make_blobs(512, 64, 4, 0.3f, 31, 0), make_blobs(128, 64, 4, 0.3f, 31, 1)}; }

TrainConfig cnn_config(const std::string& sync, std::size_t batch) {
  TrainConfig c;
  c.sync = sync_method(sync);
  c.model = &model_info("cnn");
  c.epochs = 1;
  c.batch = batch;
  c.sgd.lr = 0.05f;
  c.seed = 3;
  c.iterations_per_epoch = kCnnSteps;
  c.quiet = true;
  return c;
}

std::vector<float> cnn_params_on_all_ranks(const Comm& world, std::vector<float> params, std::size_t n) {
  params.resize(n);
  check_mpi(MPI_Bcast(params.data(), static_cast<int>(n), MPI_FLOAT, 0, world.native()), "MPI_Bcast", world.rank());
  return params;
}

// Whether `text` is the same on every rank of `world`.
bool same_on_every_rank(const Comm& world, const std::string& text) {
  const auto [lo, hi] = world.min_max(static_cast<std::uint64_t>(std::hash<std::string>{}(text)));
  return lo == hi;
}

}  // namespace

TEST_CASE("cnn: synchronous data parallelism equals serial SGD with the global batch; gossip and compression train it") {
  const Comm world = Comm::world();
  const TrainTest data = cnn_images();
  const std::size_t b = 4;
  struct Variant {
    std::string sync;
    int servers = 0;
    bool buckets = false;
  };
  for (const Variant& v : {Variant{"ring"}, Variant{"ps", 1}, Variant{"ring", 0, true}}) {
    if (v.servers >= world.size()) continue;
    TrainConfig c = cnn_config(v.sync, b);
    if (v.servers) c.servers = v.servers;
    c.buckets = v.buckets;
    c.bucket_bytes = 64 << 10;  // several buckets, the dense layer's weights cut between rows
    const TrainResult r = train(c, data, world);
    const Comm self(MPI_COMM_SELF);
    const std::vector<float> reference =
        train(cnn_config("serial", b * static_cast<std::size_t>(r.workers)), data, self).params;
    const std::vector<float> got = cnn_params_on_all_ranks(world, r.params, reference.size());
    CAPTURE(c.sync_name());
    CHECK(reference.size() == 185732);
    CHECK(r.steps == kCnnSteps);
    CHECK(test::relative_difference(got, reference) < 1e-5);
  }
  // The families that do not compute serial SGD's steps still train the CNN: past chance (1/4) within the epoch.
  for (const char* sync : {"gossip", "ring-topk"}) {
    TrainConfig c = cnn_config(std::string(sync) == "gossip" ? "gossip" : "ring", b);
    if (std::string(sync) == "ring-topk") c.compression = test::parsed_compression("topk:0.1");
    const TrainResult r = train(c, data, world);
    CAPTURE(c.sync_name());
    if (world.rank() == 0) CHECK(r.test_accuracy > 0.6);
  }
}

TEST_CASE(
    "cnn: every rank runs rank 0's kernel plan, and one plan that mixes kernel sets gives every rank the same "
    "gradient bits" *
    doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const std::vector<std::string>& sets = configured_blis().kernel_sets;
  SKIP_UNLESS(sets.size() >= 2 && per_call_contexts_available(), test::kNoSecondKernelSet);
  const Cnn model(CnnShape{.side = 8, .channels1 = 8, .channels2 = 16, .hidden = 32, .classes = 4, .cols_bytes = 20000});
  const std::size_t batch = 4;
  const std::vector<GemmShape> shapes = model.planned_gemms(batch);
  // Each rank's own choice differs (the check below is not vacuous); the agreed plan is one on every rank.
  const auto cycling = [&](std::size_t first) {
    KernelPlan plan;
    plan.source = "test";
    for (std::size_t i = 0; i < shapes.size(); ++i)
      plan.gemms.push_back({shapes[i], sets[(first + i) % sets.size()], {}});
    return plan;
  };
  install_kernel_plan(cycling(static_cast<std::size_t>(world.rank())), configured_blis());
  if (world.size() > 1) CHECK_FALSE(same_on_every_rank(world, installed_kernel_plan().to_text()));
  const KernelPlan adopted = install_agreed_kernel_plan(world, shapes);
  CHECK(same_on_every_rank(world, installed_kernel_plan().to_text()));
  REQUIRE(installed_kernel_plan().gemms.size() == shapes.size());
  for (const GemmShape& g : model.training_gemms(batch))
    CHECK(planned_context(g) == kernel_set_context(adopted.find(g)->kernels));

  // Why it matters: one plan, however it mixes kernel sets, gives every rank the same gradient bits for the same
  // batch; each rank's own would not (the kernel sets block MNIST's long products, k = 3136 in the dense layer,
  // differently). So a run's bits do not depend on which rank computed which shard.
  const Cnn mnist;
  const std::vector<GemmShape> mnist_shapes = mnist.planned_gemms(batch);
  KernelPlan mixed;
  for (std::size_t i = 0; i < mnist_shapes.size(); ++i)
    mixed.gemms.push_back({mnist_shapes[i], sets[(1 + i) % sets.size()], {}});
  install_kernel_plan(mixed, configured_blis());
  const Dataset data = make_blobs(batch, mnist.input_features(), 10, 0.3f, 5);
  std::vector<float> params(mnist.parameter_count()), grads(params.size());
  mnist.init(params, 3);
  Workspace ws(mnist, batch);
  Batch b(batch, data.features);
  std::vector<std::uint32_t> rows(batch);
  for (std::uint32_t j = 0; j < batch; ++j) rows[j] = j;
  gather_batch(data, rows, b);
  mnist.loss_and_gradient(params, b, grads, ws);
  CHECK(
      same_on_every_rank(world, std::string(reinterpret_cast<const char*>(grads.data()), grads.size() * sizeof(float))));
}
