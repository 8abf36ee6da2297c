// Gradient compression with error feedback (compression/, trainers/gradient_compression/): lossless settings equal dense
// SGD, error feedback fixes a biased compressor, the residual's bookkeeping is exact, bad input is refused before any
// step.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/methods.hpp"
#include "compression/compressors.hpp"
#include "compression/error_feedback.hpp"
#include "compression_support.hpp"
#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "test_support.hpp"
#include "trainers/cli/cli.hpp"
#include "trainers/config/compression_checks.hpp"
#include "trainers/config/validate_config.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

// An error-fed compressor named `text` on `comm` for `tensors`, its sums through `method`.
ErrorFeedback compressed(const std::string& text, const Comm& comm, const std::vector<Tensor>& tensors,
                         bool feedback = true, const char* method = "ring") {
  const CompressionChoice c = test::parsed_compression(text);
  const CompressorSetup setup{comm, find_allreduce_method(method), {}, tensors, c.param, 7};
  return ErrorFeedback(c.compressor->make(setup), tensors.back().offset + tensors.back().size(), feedback);
}

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = 2.0f * rng.uniform() - 1.0f;
  return v;
}

// Six separable blobs of 20 features, and the MLP 20-6-6 on them: both weight matrices have min(m, n) = 6, so
// powersgd:6 is full rank everywhere (a softmax layer's gradient has rank classes - 1 at most, hence the hidden layer
// of the same width: its gradient has full rank while its units are alive).
TrainTest six_blobs() { return {make_blobs(1024, 20, 6, 0.3f, 17, 0), make_blobs(256, 20, 6, 0.3f, 17, 1)}; }

TrainConfig narrow_mlp(const std::string& sync) {
  TrainConfig c = test::small_mlp(sync, 16, 8);
  c.hidden = {6};
  return c;
}

}  // namespace

// Top-k keeps every entry at F = 1; PowerSGD at full rank projects each gradient onto a basis of the summed
// gradient's column space, which reproduces the sum. Neither is bit for bit: the sum is taken in another order (rank
// order, not the ring's) and PowerSGD's projection P P^T rounds. The bound, 1e-6 of the model's norm after 8 steps,
// leaves a few dozen float32 roundings (2^-24 each) per parameter; one rank less, or a tenth of the entries left
// out, moves this model by more than 1e-5 (checked below, so the problem can tell a lossless setting from a lossy
// one).
TEST_CASE("top-k with F = 1 and PowerSGD at full rank train like dense SGD, to rounding") {
  const Comm world = Comm::world();
  const TrainTest data = six_blobs();
  const std::vector<float> dense = train(narrow_mlp("ring"), data, world).params;
  struct Case {
    const char* compressor;
    bool lossless;
  };
  // PowerSGD sums through --sync's method: every method training uses that rounds nothing on the way (ring-bf16 does).
  // Top-k exchanges its own parts, so one method is enough for it.
  std::vector<std::string> exact_methods;
  for (const AllreduceMethod& m : allreduce_method_table())
    if (trains(m) && m.exact) exact_methods.emplace_back(m.name);
  for (const Case k :
       {Case{"topk:1", true}, Case{"powersgd:6", true}, Case{"topk:0.9", false}, Case{"powersgd:5", false}}) {
    const bool powersgd = std::string(k.compressor).starts_with("powersgd");
    for (const std::string& method : powersgd ? exact_methods : std::vector<std::string>{"ring"}) {
      TrainConfig c = narrow_mlp(method);
      c.compression = test::parsed_compression(k.compressor);
      const std::vector<float> got = train(c, data, world).params;
      if (world.rank() != 0) continue;
      CAPTURE(k.compressor);
      CAPTURE(method);
      const double difference = test::relative_difference(got, dense);
      CAPTURE(difference);
      CHECK(k.lossless ? difference < 1e-6 : difference > 1e-5);
    }
  }
  CHECK(exact_methods.size() >= 6);  // ring, mpi, rd, rhd, hier, auto at least
}

// Workers pull x towards their targets: half of them towards (0, 0), half towards (4, 2); the optimum is the mean,
// (2, 1). The scaled sign sends mean|g| * sign(g); on the segment where x1 + x2 = 3 both groups' scales are equal and
// their signs opposite, so the summed update vanishes there: without error feedback SGD stops on that line, at
// (1.5, 1.5) from (0.5, 0.5). With it, what the sign left out is sent in later steps and x reaches (2, 1) up to a
// neighbourhood of the step size.
TEST_CASE("sign with error feedback reaches the optimum of a problem where the scaled sign alone stalls") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() % 2 == 0, "the two groups of workers need an even number of ranks");
  const std::vector<Tensor> tensors = {{0, 2, 1, "x"}};
  const float target[2][2] = {{0.0f, 0.0f}, {4.0f, 2.0f}};
  auto run = [&](bool feedback) {
    ErrorFeedback sign = compressed("sign", world, tensors, feedback);
    Sgd sgd({.lr = 0.01f}, 2);
    std::vector<float> x = {0.5f, 0.5f}, g(2);
    for (int step = 0; step < 1000; ++step) {
      for (int i = 0; i < 2; ++i) g[i] = x[i] - target[world.rank() % 2][i];
      sign.step(g);
      sgd.step(x, g, 1.0f / static_cast<float>(world.size()));
    }
    return x;
  };
  const std::vector<float> with = run(true), without = run(false);
  CAPTURE(with[0]);
  CAPTURE(with[1]);
  CAPTURE(without[0]);
  CAPTURE(without[1]);
  CHECK(std::hypot(with[0] - 2.0f, with[1] - 1.0f) < 0.02);
  CHECK(std::hypot(without[0] - 1.5f, without[1] - 1.5f) < 0.02);  // stalled on the line, far from (2, 1)
}

// Per worker: r' = fl(fl(g + r) - c), bit for bit, which is what the code computes and what makes c + r' = g + r up
// to the one rounding of the subtraction; and the sum every worker gets is the workers' contributions added up.
TEST_CASE("error feedback: applied update plus new residual is gradient plus old residual, on every worker") {
  const Comm world = Comm::world();
  const std::vector<Tensor> tensors = model_tensors(Mlp({12, 6, 3}).layers());
  const std::size_t n = tensors.back().offset + tensors.back().size();
  for (const char* text : {"powersgd:2", "topk:0.3", "sign"}) {
    for (bool feedback : {true, false}) {
      CAPTURE(text);
      CAPTURE(feedback);
      ErrorFeedback ef = compressed(text, world, tensors, feedback);
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> g = random_values(n, 100 * step + world.rank());
        const std::vector<float> old(ef.residual().begin(), ef.residual().end());
        std::vector<float> sum = g;
        ef.step(sum);
        const std::span<const float> c = ef.contribution(), r = ef.residual();
        bool exact = true, close = true;
        for (std::size_t i = 0; i < n; ++i) {
          const float a = feedback ? g[i] + old[i] : g[i];
          exact = exact && r[i] == (feedback ? a - c[i] : 0.0f);
          close = close && (!feedback || std::abs((c[i] + r[i]) - a) <= 1e-6f * std::max(1.0f, std::abs(a)));
        }
        CHECK(exact);
        CHECK(close);
        // Every worker's contribution, added in rank order (how top-k and sign sum; PowerSGD decodes the sum of the
        // Q's instead, one rounding apart).
        const std::vector<float> all = world.all_gather(std::vector<float>(c.begin(), c.end()));
        std::vector<float> expected(n, 0.0f);
        for (int w = 0; w < world.size(); ++w)
          for (std::size_t i = 0; i < n; ++i) expected[i] += all[static_cast<std::size_t>(w) * n + i];
        CHECK(test::relative_difference(sum, expected) <= (std::string(text) == "powersgd:2" ? 1e-5 : 0.0));
      }
    }
  }
}

TEST_CASE("--compress is refused before any step when the name, its parameter or the run cannot carry it") {
  struct Refused {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Refused& r :
       {Refused{{"--compress", "zip"}, "unknown compressor 'zip' (choose powersgd:R, topk:F, sign)"},
        Refused{{"--compress", "topk:0"}, "topk:F needs a fraction F in (0, 1], got 0"},
        Refused{{"--compress", "topk:1.5"}, "topk:F needs a fraction F in (0, 1], got 1.5"},
        Refused{{"--compress", "topk"}, "'topk' needs a number: topk:F"},
        Refused{{"--compress", "powersgd:2.5"}, "powersgd:R needs a whole rank R >= 1, got 2.5"},
        Refused{{"--compress", "sign:3"}, "'sign' takes no parameter"},
        Refused{{"--compress", "sign", "--error-feedback", "2"}, "--error-feedback: is 0 or 1, got 2"}}) {
    CAPTURE(r.args[1]);
    const CliOutcome out = parse_train_args(r.args);
    CHECK(!out.config);
    CHECK(out.exit_code == 2);
    test::check_mentions(out.message, {r.message});
  }
  const CliOutcome ok = parse_train_args({"--sync", "rhd", "--compress", "powersgd:4", "--error-feedback", "0"});
  REQUIRE(ok.config);
  CHECK(ok.config->sync_name() == "rhd-powersgd4-noef");
  CHECK(validate(*ok.config, 4).empty());
  const CliOutcome listed = parse_train_args({"--list-compressors"});
  CHECK(!listed.config);
  CHECK(listed.exit_code == 0);
  CHECK(listed.message == compressor_listing());
  for (const CompressorInfo* c : compressor_table()) test::check_mentions(listed.message, {std::string(c->name)});

  const TrainConfig ring = *parse_train_args({"--sync", "ring", "--compress", "sign"}).config;
  struct Invalid {
    TrainConfig config;
    std::string message;
  };
  TrainConfig ps = ring, powersgd_ps = ring, serial = ring, buckets = ring, pipeline = ring, feedback_alone{};
  ps.sync = sync_method("ps");
  powersgd_ps.sync = sync_method("ps");
  powersgd_ps.compression = test::parsed_compression("powersgd:4");
  serial.sync = sync_method("serial");
  buckets.buckets = true;
  pipeline.pipeline = true;
  feedback_alone.sync = sync_method("ring");
  feedback_alone.compression.error_feedback_given = true;
  for (const Invalid& i :
       {Invalid{powersgd_ps,
                "--compress powersgd4: the parameter server (--sync ps) takes pushes it can decode key "
                "range by key range (topk, sign)"},
        Invalid{serial, "--compress sign: needs an allreduce --sync (ring, "},
        Invalid{feedback_alone, "--error-feedback: only with --compress"}})
    test::check_mentions(validate(i.config, i.config.sync == sync_method("serial") ? 1 : 4), {i.message});
  // Compression composes with both overlap modes (tests/test_compression_overlap.cpp trains them), and top-k and
  // sign with the parameter server (tests/test_ps_compression.cpp).
  CHECK(validate(ps, 4).empty());
  CHECK(validate(buckets, 4).empty());
  CHECK(validate(pipeline, 4).empty());

  TrainConfig wide = ring;
  wide.model = &model_info("mlp");
  wide.hidden = {16};
  wide.compression = test::parsed_compression("powersgd:11");
  const Mlp model({784, 16, 10});
  test::check_mentions(validate_against_model(wide, model.layers()),
                       {"powersgd:11: rank 11 is larger than layer 2 weights (10 x 16) allows (at most 10)"});
  wide.compression = test::parsed_compression("powersgd:10");
  CHECK(validate_against_model(wide, model.layers()).empty());
  wide.compression = test::parsed_compression("powersgd:11");
  CHECK_THROWS_AS(train(wide, test::blobs(), Comm::world()), std::invalid_argument);  // before any message
}

// The residuals, PowerSGD's warm-start Q and its count of renewed columns are training state: a run stopped at a
// checkpoint and resumed continues bit for bit as if it had not stopped (with momentum, whose state precedes theirs).
TEST_CASE("with compression, a resumed run continues bit for bit from the checkpoint") {
  const Comm world = Comm::world();
  const TrainTest data = six_blobs();
  for (const char* text : {"powersgd:2", "topk:0.1", "sign"}) {
    CAPTURE(text);
    const auto dir = test::temp_dir("compress-resume", world.rank());
    TrainConfig c = narrow_mlp("rhd");
    c.compression = test::parsed_compression(text);
    c.sgd.momentum = 0.9f;
    c.quiet = true;
    c.epochs = 2;
    const std::vector<float> straight = train(c, data, world).params;
    c.checkpoint_dir = dir.string();
    c.epochs = 1;
    train(c, data, world);
    c.epochs = 2;
    c.resume = true;
    const std::vector<float> resumed = train(c, data, world).params;
    if (world.rank() == 0) CHECK(resumed == straight);
    std::filesystem::remove_all(dir);
  }
}

// Resumed on fewer workers, the workers that remain keep their residuals and those of the workers that left are
// dropped: train() checks the resumed state against the checkpoint's, cut to the new size (std::logic_error if it
// differs), and a residual of the wrong worker, or one folded in, would fail that check.
TEST_CASE("with compression, a run resumes on fewer workers, keeping the residuals of those that remain") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "resuming on fewer workers needs 3 ranks");
  const TrainTest data = six_blobs();
  const auto dir = test::temp_dir("compress-elastic", world.rank());
  TrainConfig c = narrow_mlp("ring");
  c.compression = test::parsed_compression("powersgd:2");
  c.checkpoint_dir = dir.string();
  c.quiet = true;
  train(c, data, world);
  c.resume = true;
  c.epochs = 2;
  const Comm fewer = world.split(world.rank() < 2 ? 0 : MPI_UNDEFINED, world.rank());
  if (fewer.valid()) {
    const TrainResult r = train(c, data, fewer);
    if (fewer.rank() == 0) CHECK(r.workers == 2);
  }
  world.barrier();
  std::filesystem::remove_all(dir);
}
