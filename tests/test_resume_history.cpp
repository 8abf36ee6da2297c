// A resumed run continues its reports from the checkpoint's report history (model/checkpoint_manifest.hpp,
// trainers/loop/trainer.hpp): the best accuracy so far, the rounds or steps to --target-accuracy (crossed before the
// checkpoint or after it, interpolated from the last evaluation before it) and the time to it, which counts the
// training before the checkpoint. Each is compared with the run that was never interrupted; a checkpoint without a
// history (written before it was recorded) still resumes, its reports counted from the resumed run as before.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/checkpoint_manifest.hpp"
#include "test_support.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/loop/run_start.hpp"
#include "trainers/loop/trainer.hpp"
#include "trainers/report/report.hpp"

using namespace gradsync;
namespace fs = std::filesystem;

namespace {

// Federated averaging on test::blobs's small MLP: 20 clients of two labels each, 4 a round; accuracy climbs slowly.
TrainConfig federated_run() {
  TrainConfig c = test::small_mlp("fedavg", 8, 1);
  c.iterations_per_epoch = TrainConfig::kFullPass;
  c.fed.clients = 20;
  c.fed.client_fraction = 0.2;
  c.fed.partition = {PartitionKind::shards, 2, 0};
  c.quiet = true;
  return c;
}

// The "rounds to A: R" line of a result's target report, or "" if it has none.
std::string rounds_line(const TrainResult& r) {
  const std::string text = format_target(r);
  const std::size_t at = text.find("rounds to ");
  return at == std::string::npos ? std::string() : text.substr(at);
}

// Rank 0's newest committed set in `dir`: its manifest (the one rank 0 wrote).
Manifest newest_manifest(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (step_of_set_dir(e.path().filename().string()) >= 0) sets.push_back(e.path());
  std::ranges::sort(sets);
  return read_manifest((sets.back() / manifest_file_name(0)).string());
}

// A target between `low` and `high` best accuracies, rank 0's on every rank (the configuration must agree).
double target_between(double low, double high, const Comm& world) { return world.broadcast((low + high) / 2, 0); }

}  // namespace

TEST_CASE("a federated run resumed at round R reports the uninterrupted run's best accuracy and rounds to a target") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  const bool root = world.rank() == 0;
  constexpr int kR = 3;
  TrainConfig c = federated_run();
  c.epochs = 2 * kR;
  const TrainResult straight = train(c, data, world);
  // A target first crossed in a round before the checkpoint (not the first: interpolated from the one before), and
  // one crossed in the round right after it, interpolated from the last round before the checkpoint.
  double best[2 * kR + 1] = {};
  for (int k = 1; root && k <= 2 * kR; ++k) best[k] = straight.epochs[static_cast<std::size_t>(k - 1)].best_accuracy;
  int rise = kR;
  while (rise > 1 && best[rise] <= best[rise - 1]) --rise;
  const double before = target_between(best[rise - 1], best[rise], world);
  const double after = target_between(best[kR], best[kR + 1], world);
  CAPTURE(rise);
  REQUIRE(world.broadcast(rise, 0) > 1);                              // the accuracy rose inside the first R rounds
  REQUIRE(world.broadcast(best[kR + 1] > best[kR] ? 1 : 0, 0) == 1);  // and right after them
  for (const double target : {before, after}) {
    CAPTURE(target);
    const auto dir = test::temp_dir("resume-history-fedavg", world.rank());
    c.target_accuracy = target;
    c.epochs = 2 * kR;
    c.checkpoint_dir.clear();
    c.resume = c.stop_at_target = false;
    const TrainResult whole = train(c, data, world);
    c.checkpoint_dir = dir.string();
    c.checkpoint_every = 1;
    c.epochs = kR;
    const TrainResult first = train(c, data, world);
    const Manifest written = root ? newest_manifest(dir) : Manifest{};  // only the host's leader writes
    c.epochs = 2 * kR;
    c.resume = true;
    const TrainResult resumed = train(c, data, world);
    c.epochs = 2 * kR + 1;
    c.stop_at_target = true;  // reached before the newest checkpoint (round 2R): nothing to train
    const TrainResult stopped = train(c, data, world);
    fs::remove_all(dir);
    if (!root) continue;
    CHECK(written.history.known);
    CHECK(written.history.evaluations == kR);
    CHECK(written.history.best_accuracy == first.epochs.back().best_accuracy);
    CHECK(written.history.elapsed_s == first.epochs.back().elapsed_s);
    REQUIRE(resumed.epochs.size() == static_cast<std::size_t>(kR));
    for (int k = 0; k < kR; ++k) {
      CAPTURE(k);
      const EpochReport& w = whole.epochs[static_cast<std::size_t>(kR + k)];
      CHECK(resumed.epochs[static_cast<std::size_t>(k)].test_accuracy == w.test_accuracy);
      CHECK(resumed.epochs[static_cast<std::size_t>(k)].best_accuracy == w.best_accuracy);
    }
    CHECK(resumed.best_accuracy == whole.best_accuracy);
    REQUIRE(whole.target_steps > 0);
    CHECK(resumed.target_steps == whole.target_steps);
    CHECK(rounds_line(resumed) == rounds_line(whole));
    CHECK(!rounds_line(resumed).empty());
    CHECK(resumed.resumed_s == first.epochs.back().elapsed_s);
    CHECK(resumed.epochs.front().elapsed_s >= resumed.resumed_s);
    CHECK(resumed.target_elapsed_s >= 0);
    if (target == before) {
      CHECK(first.target_steps == whole.target_steps);
      CHECK(resumed.target_elapsed_s == first.target_elapsed_s);  // carried, not measured again
    } else {
      CHECK(first.target_steps == -1);
      CHECK(resumed.target_steps > kR);
      CHECK(resumed.target_steps <= kR + 1);
      CHECK(resumed.target_elapsed_s >= resumed.resumed_s);
    }
    CHECK(stopped.epochs.empty());
    CHECK(stopped.target_steps == whole.target_steps);
    CHECK(rounds_line(stopped) == rounds_line(whole));
    CHECK(test::contains(format_summary(stopped), "nothing trained"));
  }
}

TEST_CASE("a ring run's time to a target after --resume counts the training before the checkpoint, also mid-epoch") {
  const TrainTest data = test::blobs(512);
  const Comm world = Comm::world();
  const bool root = world.rank() == 0;
  TrainConfig c = test::small_mlp("ring", 4, 8);  // 8 global steps an epoch
  c.global_batch = 12;                            // the same run on 1 to 4 ranks
  c.sgd.lr = 0.01f;                               // slow enough that the accuracy still climbs after epoch 2
  c.quiet = true;
  c.epochs = 6;
  const TrainResult straight = train(c, data, world);
  // A target first crossed after the checkpoint of epoch 2, as soon after it as the accuracy rises.
  int rise = 3;
  while (root && rise < c.epochs && straight.epochs[rise - 1].best_accuracy <= straight.epochs[rise - 2].best_accuracy)
    ++rise;
  rise = world.broadcast(rise, 0);
  CAPTURE(rise);
  const double low = root ? straight.epochs[rise - 2].best_accuracy : 0;
  const double high = root ? straight.epochs[rise - 1].best_accuracy : 0;
  REQUIRE(world.broadcast(high > low ? 1 : 0, 0) == 1);
  c.target_accuracy = target_between(low, high, world);
  const TrainResult whole = train(c, data, world);
  const auto dir = test::temp_dir("resume-history-ring", world.rank());
  c.checkpoint_dir = dir.string();
  c.checkpoint_steps = 4;  // sets at steps 4, 8, 12 and 16; the newest two are kept
  c.epochs = 2;
  const TrainResult first = train(c, data, world);
  const auto mid_dir = test::temp_dir("resume-history-ring-mid", world.rank());
  if (root) {  // the first run's sets without the newest (step 16): step 12, inside epoch 2, is left
    fs::copy(dir, mid_dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    fs::remove_all(mid_dir / set_dir_name(16));
    CHECK(newest_manifest(mid_dir).step == 12);
  }
  world.barrier();
  c.epochs = 6;
  c.resume = true;
  const TrainResult resumed = train(c, data, world);  // from step 16, the end of epoch 2
  c.checkpoint_dir = mid_dir.string();
  const TrainResult mid = train(c, data, world);
  fs::remove_all(dir);
  fs::remove_all(mid_dir);
  if (!root) return;
  REQUIRE(first.epochs.size() == 2u);
  const double e1 = first.epochs[0].elapsed_s, e2 = first.epochs[1].elapsed_s;
  REQUIRE(whole.target_steps > 16);
  for (const TrainResult* r : {&resumed, &mid}) {
    CAPTURE(r == &mid);
    CHECK(r->target_steps == whole.target_steps);  // the same steps, interpolated from the evaluation before
    REQUIRE(r->epochs.size() == (r == &mid ? 5u : 4u));
    double previous = r->resumed_s;
    for (const EpochReport& e : r->epochs) {
      CHECK(e.elapsed_s > previous);  // monotone, from the time at the checkpoint
      CHECK(e.best_accuracy == whole.epochs[static_cast<std::size_t>(e.epoch - 1)].best_accuracy);
      previous = e.elapsed_s;
    }
    CHECK(r->target_elapsed_s >= r->resumed_s);  // the total training time, not this run's alone
    CHECK(r->wall_s < r->epochs.back().elapsed_s);
  }
  CHECK(resumed.resumed_s == e2);
  CHECK(mid.resumed_s > e1);  // epoch 1 and half of epoch 2 (the slowest rank's time at the checkpoint)
  CHECK(mid.resumed_s < e2);
}

TEST_CASE("a checkpoint without a report history (written before it was recorded) resumes, its reports as before") {
  const TrainTest data = test::blobs(960);
  const Comm world = Comm::world();
  const auto dir = test::temp_dir("resume-history-old", world.rank());
  TrainConfig c = federated_run();
  c.checkpoint_dir = dir.string();
  c.checkpoint_every = 1;
  c.epochs = 3;
  const TrainResult first = train(c, data, world);
  if (world.rank() == 0)  // every manifest rewritten as before the history line: it is dropped, the CRC made anew
    for (const fs::directory_entry& set : fs::directory_iterator(dir))
      for (const fs::directory_entry& f : fs::directory_iterator(set.path())) {
        if (f.path().filename().string().rfind("manifest-r", 0) != 0) continue;
        Manifest m = read_manifest(f.path().string());
        m.history = {};
        std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << serialize_manifest(m);
      }
  world.barrier();
  c.epochs = 5;
  c.resume = true;
  c.target_accuracy = 0.01;  // reached at once: by the resumed run's first round, as before the history
  const TrainResult resumed = train(c, data, world);
  const Manifest later = world.rank() == 0 ? newest_manifest(dir) : Manifest{};
  fs::remove_all(dir);
  if (world.rank() != 0) return;
  REQUIRE(resumed.epochs.size() == 2u);
  CHECK(resumed.resumed_s == 0);
  CHECK(resumed.epochs.front().best_accuracy == resumed.epochs.front().test_accuracy);
  CHECK(resumed.wall_s == resumed.epochs.back().elapsed_s);
  CHECK(resumed.target_steps == 4);  // the resumed run's first evaluation, round 4
  CHECK(later.step == 5);
  CHECK_FALSE(later.history.known);  // a history counted from the resumed run alone is not written as the run's
}

TEST_CASE("a resumed run keeps the checkpoint's target crossing for its own target, and carries it on without one") {
  ResumePoint start;
  start.history = {true, 4, 0.8, 40, 10.0, 12.0, 0.7, 31.5, 7.25};
  TrainConfig c = federated_run();
  c.target_accuracy = 0.7;
  const ReportHistory fresh = starting_history(c, start);  // no --resume: nothing of the checkpoint's
  CHECK(fresh.known);
  CHECK(fresh.evaluations == 0);
  CHECK(fresh.elapsed_s == 0);
  CHECK(fresh.target_accuracy == 0.7);
  CHECK(fresh.target_steps == -1);
  c.resume = true;
  CHECK(starting_history(c, start) == start.history);  // the same target: everything as written
  c.target_accuracy = 0.75;                            // another target, reached before the checkpoint: when is not known
  ReportHistory h = starting_history(c, start);
  CHECK(h.target_reached());
  CHECK(h.target_steps == -1);
  CHECK(h.target_s == -1);
  CHECK(h.best_accuracy == 0.8);
  TrainResult r;
  r.target_accuracy = 0.75;
  r.best_accuracy = 0.8;
  CHECK(test::contains(format_target(r), "reached before the checkpoint this run resumed from; when is not known"));
  r.best_accuracy = 0.5;
  CHECK(format_target(r) == "target 0.75 not reached (best test accuracy 0.5000)");
  c.target_accuracy = 0.9;  // not reached yet: its crossing will be measured
  CHECK_FALSE(starting_history(c, start).target_reached());
  c.target_accuracy = 0;  // none: the checkpoint's crossing is carried on to the sets this run writes
  CHECK(starting_history(c, start) == start.history);
  start.history = {};  // a checkpoint without a history: the reports count from the resumed run
  c.target_accuracy = 0.7;
  h = starting_history(c, start);
  CHECK_FALSE(h.known);
  CHECK(h.evaluations == 0);
  CHECK(h.elapsed_s == 0);
  CHECK_FALSE(h.target_reached());
}
