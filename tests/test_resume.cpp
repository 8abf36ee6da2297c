// Resume refuses a checkpoint from a different run, field by field, where it is enforced: train() with --resume
// (load_newest_checkpoint, run_fingerprint). Each fingerprint field is changed alone and must be refused with both
// values named; the settings a resumed run may change (checkpointing.hpp), the world size among them, are changed
// and must be accepted.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "collectives/comm.hpp"
#include "model/checkpoint.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// The CheckpointError message train() throws on this rank, or a note saying it did not throw one.
std::string resume_error(const TrainConfig& c, const TrainTest& data, const Comm& comm) {
  TrainConfig r = c;
  r.resume = true;
  r.epochs = c.epochs + 1;
  try {
    train(r, data, comm);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(resumed without an error)";
}

using test::contains;

struct Change {
  std::string field;
  std::function<void(TrainConfig&)> apply;
  std::string written, resumed;  // the fingerprint's text for the field before and after
};

}  // namespace

TEST_CASE("resume refuses a checkpoint differing in any one fingerprint field, naming both values") {
  const Comm self(MPI_COMM_SELF);  // each rank on its own, in its own directory
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("resume-fields", Comm::world().rank());
  const TrainConfig written = test::checkpointed_mlp("serial", 8, dir.string());
  train(written, data, self);
  const std::vector<Change> changes = {
      {"model", [](TrainConfig& c) { c.model = &model_info("softmax"); }, "model=20-16-4", "model=20-4"},
      {"hidden", [](TrainConfig& c) { c.hidden = {8}; }, "model=20-16-4", "model=20-8-4"},
      {"sync", [](TrainConfig& c) { c.sync = sync_method("ring"); }, "sync=serial", "sync=ring"},
      {"dataset", [](TrainConfig& c) { c.dataset = DatasetId::fashion; }, "dataset=mnist", "dataset=fashion"},
      {"seed", [](TrainConfig& c) { c.seed = 4; }, "seed=3", "seed=4"},
      {"momentum", [](TrainConfig& c) { c.sgd.momentum = 0.5f; }, "momentum=0 ", "momentum=0.5 "},
      {"chunk", [](TrainConfig& c) { c.chunk_bytes = 4096; }, "chunk=0", "chunk=4096"},
  };
  for (const Change& change : changes) {
    CAPTURE(change.field);
    TrainConfig c = written;
    change.apply(c);
    test::check_mentions(resume_error(c, data, self), {"different run", dir.string(), change.written, change.resumed});
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("resume refuses another per-worker batch, naming both and the way to keep the global batch") {
  const Comm self(MPI_COMM_SELF);
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("resume-batch", Comm::world().rank());
  const TrainConfig written = test::checkpointed_mlp("serial", 8, dir.string());
  train(written, data, self);
  TrainConfig c = written;
  c.batch = 4;
  test::check_mentions(resume_error(c, data, self), {"--batch 4", "batch=8 per worker", "--global-batch 8"});
  c.batch = written.batch;
  c.global_batch = 16;
  CHECK(contains(resume_error(c, data, self), "--global-batch 16, but the checkpoint's run had a global batch of 8"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("resume on a different number of ranks continues from the checkpoint's state, on every rank") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "resuming on another rank count needs 2 ranks");
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("resume-ranks", world.rank());
  TrainConfig c = test::checkpointed_mlp("ring", 8, dir.string());
  c.sgd.momentum = 0.9f;
  train(c, data, Comm(MPI_COMM_SELF));  // rank 0's directory now holds a one-rank ring checkpoint
  c.resume = true;
  c.epochs = 2;
  // train() itself refuses (std::logic_error) a resumed state whose CRC differs from the checkpoint's.
  const TrainResult r = train(c, data, world);
  if (world.rank() == 0) {
    REQUIRE(r.epochs.size() == 1);
    CHECK(r.epochs.front().epoch == 2);
    CHECK(r.workers == world.size());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("resume refuses a parameter-server checkpoint of another mode or staleness bound") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a parameter server with 2 workers needs 3 ranks");
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("resume-ps", world.rank());
  TrainConfig written = test::checkpointed_mlp("ps", 8, dir.string());
  set_ps_options(written, {.mode = PsMode::ssp, .staleness = 1});
  train(written, data, world);
  const std::vector<Change> changes = {
      {"ps-mode", [](TrainConfig& c) { set_ps_options(c, {.mode = PsMode::asp, .staleness = 1}); }, "sync=ps-ssp1 ",
       "sync=ps-asp "},
      {"staleness", [](TrainConfig& c) { set_ps_options(c, {.mode = PsMode::ssp, .staleness = 2}); }, "sync=ps-ssp1 ",
       "sync=ps-ssp2 "},
  };
  for (const Change& change : changes) {
    CAPTURE(change.field);
    TrainConfig c = written;
    change.apply(c);
    test::check_mentions(resume_error(c, data, world), {"different run", change.written, change.resumed});
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("resume accepts a run that changes only epochs, learning rate, weight decay or steps per epoch") {
  const Comm self(MPI_COMM_SELF);
  const TrainTest data = test::blobs(512);
  const auto dir = test::temp_dir("resume-allowed", Comm::world().rank());
  const TrainConfig written = test::checkpointed_mlp("serial", 8, dir.string());
  for (const std::function<void(TrainConfig&)>& change : std::vector<std::function<void(TrainConfig&)>>{
           [](TrainConfig& c) { c.epochs = 3; }, [](TrainConfig& c) { c.sgd.lr = 0.05f; },
           [](TrainConfig& c) { c.sgd.weight_decay = 0.01f; }, [](TrainConfig& c) { c.iterations_per_epoch = 5; }}) {
    train(written, data, self);  // a fresh one-epoch checkpoint each time
    TrainConfig c = written;
    c.resume = true;
    c.epochs = 2;
    change(c);
    const TrainResult r = train(c, data, self);
    CHECK(r.epochs.size() == static_cast<std::size_t>(c.epochs - 1));  // it resumed after epoch 1
    CHECK(r.epochs.front().epoch == 2);
  }
  std::filesystem::remove_all(dir);
}
