#pragma once
// Helpers shared by the test files.
#include <doctest/doctest.h>
#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.hpp"
#include "model/dataset.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/synthetic.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/loop/trainer.hpp"

namespace gradsync::test {

// Where the real MNIST files are: $GRADSYNC_MNIST_DIR, else data/mnist in the source tree.
inline std::string mnist_dir() {
  if (const char* dir = std::getenv("GRADSYNC_MNIST_DIR"); dir && *dir) return dir;
  return std::string(GRADSYNC_SOURCE_DIR) + "/data/mnist";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that `message` (an error's text) names every one of `parts`; a failure names the part it lacks.
inline void check_mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    CAPTURE(message);
    CAPTURE(part);
    CHECK(contains(message, part));
  }
}

// ||a - b|| / ||b||
inline double relative_difference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  if (a.size() != b.size()) return INFINITY;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Four separable Gaussian blobs of 20 features: `train_rows` to train on, a quarter as many to test on (seed 17).
inline TrainTest blobs(std::size_t train_rows = 1024) {
  return {make_blobs(train_rows, 20, 4, 0.3f, 17, 0), make_blobs(train_rows / 4, 20, 4, 0.3f, 17, 1)};
}

// A small MLP (one hidden layer of 16) on test::blobs, `sync` with `batch` examples per worker, one epoch of
// `steps` steps, learning rate 0.2, seed 3; a case sets what it varies on the copy it gets.
inline TrainConfig small_mlp(const std::string& sync, std::size_t batch, long steps) {
  TrainConfig c;
  c.sync = sync_method(sync);
  c.model = &model_info("mlp");
  c.hidden = {16};
  c.epochs = 1;
  c.batch = batch;
  c.sgd.lr = 0.2f;
  c.seed = 3;
  c.iterations_per_epoch = steps;
  return c;
}

// small_mlp over 8 steps, quiet, checkpointing to `dir` (a path, or a pattern with %h for each host's own).
inline TrainConfig checkpointed_mlp(const std::string& sync, std::size_t batch, const std::string& dir) {
  TrainConfig c = small_mlp(sync, batch, 8);
  c.checkpoint_dir = dir;
  c.quiet = true;
  return c;
}

// A vector of `count` values particular to `rank` and `salt`, in [-1, 1).
inline std::vector<float> values_of(int rank, std::size_t count, int salt = 0) {
  std::vector<float> v(count);
  for (std::size_t k = 0; k < count; ++k)
    v[k] = static_cast<float>(std::sin(0.37 * static_cast<double>(k + 1) * (rank + 1) + 0.11 * salt));
  return v;
}

// `epochs` (even) epochs of `c` (which checkpoints to `dir` every epoch) in one run, then again as the first half
// and a resumed second half: the results of both, on `world`. `c` comes back resumed, for a further attempt by the
// caller.
inline std::pair<TrainResult, TrainResult> whole_and_resumed(TrainConfig& c, const TrainTest& data, const Comm& world,
                                                             const std::filesystem::path& dir, int epochs = 2) {
  c.epochs = epochs;
  c.checkpoint_every = 1;
  TrainResult whole = train(c, data, world);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  c.epochs = epochs / 2;
  train(c, data, world);
  c.epochs = epochs;
  c.resume = true;
  return {std::move(whole), train(c, data, world)};
}

// After whole_and_resumed(c, ...): rank 0 alone resuming the checkpoint of world.size() replicas to a third epoch is
// refused, naming "one model per worker" and the count. Every rank of `world` calls it; with one rank it checks nothing.
inline void check_replicas_refused_on_one_rank(const TrainConfig& c, const TrainTest& data, const Comm& world) {
  if (world.size() < 2) return;
  std::string error = "(resumed without an error)";
  if (world.rank() == 0) {
    try {
      TrainConfig more = c;
      more.epochs = 3;  // the set of the resumed run's end, at epoch 2
      train(more, data, Comm(MPI_COMM_SELF));
    } catch (const CheckpointError& e) {
      error = e.what();
    }
    check_mentions(error, {"one model per worker", std::to_string(world.size())});
  }
  world.barrier();
}

// Puts back the kernel plan tests/main.cpp adopted when a test case ends, whatever the case installed.
struct RestorePlan {
  KernelPlan saved = installed_kernel_plan();
  ~RestorePlan() { install_kernel_plan(saved, configured_blis()); }
};

// A fresh, empty temporary directory unique to this rank and test.
inline std::filesystem::path temp_dir(const std::string& name, int rank) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gradsync-test-" + name + "-" + std::to_string(rank) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Skipping a case whose precondition this run lacks (a CPU feature, a second BLIS kernel set, a rank count), so
// that it is reported as skipped with its reason instead of passing without having checked anything:
//   TEST_CASE("..." * doctest::test_suite("needs_avx512")) {
//     SKIP_UNLESS(cpu_isa() >= Isa::avx512, "this CPU has no AVX-512 (F, CD, DQ, BW, VL)");
// A case whose precondition the machine or the rank count decides sits in a doctest suite named needs_<what>,
// which tests/CMakeLists.txt runs as a ctest entry of its own: where every case an entry selected was skipped,
// tests/main.cpp exits 77 and ctest lists the entry as skipped. A case that merely needs 2 or 3 ranks stays in the
// main entry (it runs at the suite's 4 ranks). Rank 0 prints every skipped case with its reason after the run,
// whatever else ran (scripts/test.sh repeats them, as ctest shows no output of a skipped entry).

// The reasons of the kernel cases (needs_kernel_sets) for skipping.
inline constexpr const char* kNoKernelSet =
    "no BLIS kernel set runs by per-call context here (BLIS's shared library, or no set for this CPU)";
inline constexpr const char* kNoSecondKernelSet =
    "fewer than two BLIS kernel sets run by per-call context here (BLIS's shared library, or one set for this "
    "CPU): nothing to choose between";

// Collective over MPI_COMM_WORLD: every rank calls it at the same point of the same case, before the case's first
// check. True on every rank when `available` is false on any rank (ranks never disagree on a skip, and no rank is
// left alone in a collective the others skipped); the case is then recorded as skipped with `reason`.
bool skip_unless(bool available, const std::string& reason);

// For tests/main.cpp's case recorder: begin_case when a case starts; end_case when it ends, giving the reason it
// was skipped, or "" when it ran.
void begin_case();
std::string end_case();

}  // namespace gradsync::test

// Leaves the running test case, recorded as skipped with `reason`, unless `available` holds on every rank
// (test::skip_unless).
#define SKIP_UNLESS(available, reason)                                \
  do {                                                                \
    if (::gradsync::test::skip_unless((available), (reason))) return; \
  } while (false)
