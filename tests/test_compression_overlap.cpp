// Compression with overlap (trainers/gradient_compression/compressed_jobs.hpp, trainers/overlap/overlapped_sync.hpp): a
// compressed exchange that runs through the communication engine computes the blocking exchange's bits. Pipelined, it is
// the blocking compressed step applied one step late, residuals included; bucketed, a bucket is compressed on its own
// tensors, which is the blocking compressor wherever that compressor works per tensor; checkpoints carry the state
// of either mode.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
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
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/gradient_compression/compressed_jobs.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

constexpr int kSteps = 5;

// Every method training can sum through (ring-bf16 included): PowerSGD's allreduces use it.
std::vector<std::string> training_methods() {
  std::vector<std::string> names;
  for (const AllreduceMethod& m : allreduce_method_table())
    if (trains(m)) names.emplace_back(m.name);
  return names;
}

// A worker's gradient at step t: it depends on the parameters (so applying an update late changes the next
// gradient) and differs from worker to worker.
void gradient(std::span<const float> params, int rank, int t, std::span<float> g) {
  Rng rng(static_cast<std::uint64_t>(1000 * t + rank), 11);
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = 0.25f * static_cast<float>(rank + 1) * params[i] + (2.0f * rng.uniform() - 1.0f);
}

// A synchronizer for `c` on the world, for the MLP `model`, with `sgd`.
std::unique_ptr<Synchronizer> sync_for(const TrainConfig& c, const Mlp& model, Sgd& sgd) {
  const Comm& world = Comm::world();
  return make_synchronizer(c, {world, world, sgd, model.layers(), model.parameter_count()});
}

std::vector<float> saved_state(Synchronizer& sync) {
  std::vector<float> state(sync.state_size());
  sync.save_state(state);
  return state;
}

struct Outcome {
  std::vector<float> params, state;
};

// Blocking compressed SGD in which step t applies the sum of step t-1's gradient (the last one after the loop).
Outcome blocking_one_step_late(const TrainConfig& c, const Mlp& model) {
  Sgd sgd(c.sgd, model.parameter_count());
  const auto sync = sync_for(c, model, sgd);
  std::vector<float> params(model.parameter_count(), 0.5f), g(params.size()), pending(params.size());
  for (int t = 0; t < kSteps; ++t) {
    gradient(params, Comm::world().rank(), t, g);
    if (t > 0) sync->step(params, pending);
    std::swap(g, pending);
  }
  sync->step(params, pending);
  return {params, saved_state(*sync)};
}

// The same steps through c's overlapped synchronizer: pipelined, or bucketed with the pass's readiness reported
// layer by layer from the output layer down, as the backward pass reports it.
Outcome overlapped(const TrainConfig& c, const Mlp& model) {
  Sgd sgd(c.sgd, model.parameter_count());
  const auto sync = sync_for(c, model, sgd);
  std::vector<float> params(model.parameter_count(), 0.5f);
  std::vector<std::vector<float>> buffers(2, std::vector<float>(params.size()));
  const std::vector<LayerShape>& layers = model.layers();
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float>& g = buffers[static_cast<std::size_t>(t % sync->gradient_buffers())];
    PassObserver* observer = sync->observer(params, g);
    gradient(params, Comm::world().rank(), t, g);
    for (std::size_t l = layers.size(); observer && l-- > 0;) {
      observer->gradient_ready(layers[l].offset, layers[l].end());
      observer->between_kernels();
    }
    sync->step(params, g);
  }
  sync->drain(params);
  return {params, saved_state(*sync)};
}

TrainConfig compressed_config(const std::string& method, const std::string& text, bool feedback, Progress progress) {
  TrainConfig c;
  c.sync = sync_method(method);
  c.compression = test::parsed_compression(text, feedback);
  c.sgd = {.lr = 0.05f, .momentum = 0.5f};
  c.progress = progress;
  c.seed = 5;
  c.quiet = true;
  return c;
}

// Six separable blobs of 20 features and the MLP 20-6-6 (as tests/test_compression.cpp: powersgd:6 is full rank).
TrainTest six_blobs() { return {make_blobs(1024, 20, 6, 0.3f, 17, 0), make_blobs(256, 20, 6, 0.3f, 17, 1)}; }

TrainConfig narrow_mlp(const std::string& sync, long steps = 8) {
  TrainConfig c = test::small_mlp(sync, 16, steps);
  c.hidden = {6};
  c.quiet = true;
  return c;
}

}  // namespace

// The nonblocking form is the blocking one, moved on by test() instead of wait(): same sum, same contribution, and
// r' = fl(a - c) exactly, on every worker.
TEST_CASE("error feedback moved on by test() computes step()'s bits and keeps its bookkeeping exact") {
  const Comm world = Comm::world();
  const std::vector<Tensor> tensors = model_tensors(Mlp({12, 6, 3}).layers());
  const std::size_t n = tensors.back().offset + tensors.back().size();
  for (const char* text : {"powersgd:2", "topk:0.3", "sign"}) {
    for (bool feedback : {true, false}) {
      const std::string name = text;
      CAPTURE(name);
      CAPTURE(feedback);
      const CompressionChoice c = test::parsed_compression(text);
      const CompressorSetup setup{world, find_allreduce_method("rhd"), {}, tensors, c.param, 7};
      ErrorFeedback blocking(c.compressor->make(setup), n, feedback), polled(c.compressor->make(setup), n, feedback);
      bool same = true, exact = true;
      for (int step = 0; step < 3; ++step) {
        std::vector<float> g(n), old(polled.residual().begin(), polled.residual().end());
        std::vector<float> zeros(n, 0.0f);
        gradient(zeros, world.rank(), step, g);  // a gradient of its own per rank and step
        std::vector<float> a = g, b = g;
        blocking.step(a);
        polled.start(b);
        while (!polled.test()) {
        }
        same = same && a == b &&
               std::equal(blocking.residual().begin(), blocking.residual().end(), polled.residual().begin()) &&
               std::equal(blocking.contribution().begin(), blocking.contribution().end(), polled.contribution().begin());
        for (std::size_t i = 0; i < n; ++i) {
          const float in = feedback ? g[i] + old[i] : g[i];
          exact = exact && polled.residual()[i] == (feedback ? in - polled.contribution()[i] : 0.0f);
        }
      }
      CHECK(same);
      CHECK(exact);
      CHECK(polled.test());  // nothing in flight: done at once
    }
  }
}

// Pipe-SGD with compression: the exchange of step t's gradient (error feedback included) runs while step t+1
// computes, and its sum is applied at step t+1. That is the blocking compressed step applied one step late, bit for
// bit, and the residuals and PowerSGD's Q end equal (saved states compared), for every method PowerSGD can sum
// through and both progress modes.
TEST_CASE("pipelined compression is blocking compression applied one step late, residuals included") {
  const Mlp model({12, 6, 3});
  const std::vector<std::string> methods = training_methods();
  CHECK(methods.size() >= 7);  // ring, ring-bf16, rd, rhd, hier, auto, mpi at least
  for (const char* text : {"powersgd:2", "topk:0.3", "sign"}) {
    const bool powersgd = std::string(text).starts_with("powersgd");
    for (const std::string& method : powersgd ? methods : std::vector<std::string>{"ring", "mpi"}) {
      for (const bool feedback : {true, false}) {
        for (const Progress progress : {Progress::calls, Progress::thread}) {
          TrainConfig c = compressed_config(method, text, feedback, progress);
          const Outcome late = blocking_one_step_late(c, model);
          c.pipeline = true;
          const Outcome piped = overlapped(c, model);
          CAPTURE(c.sync_name());
          CHECK(piped.params == late.params);
          CHECK(piped.state == late.state);
          CHECK(piped.state.size() == compressed_state_size(c, model.layers(), Comm::world().size()));
        }
      }
    }
  }
}

// A bucket's compressor sees the bucket's tensors only. One bucket holding the whole model is therefore the blocking
// compressor, bit for bit, for every compressor; with a bucket per layer, sign (one scale per tensor, sums in rank
// order) still is, and PowerSGD (per matrix, its starting Q drawn as for the whole model) is up to the order in
// which its bucket's allreduce adds: bit for bit on two ranks (a + b == b + a) with an exact method, to rounding
// otherwise. The bucket's
// residual is its slice of the worker's, so the saved states agree too (PowerSGD's Q per bucket are laid out per
// bucket: its residuals, the state's tail, are compared).
TEST_CASE("bucketed compression: one bucket, or sign or PowerSGD per layer, is blocking compression") {
  const Mlp model({12, 6, 3});
  const int workers = Comm::world().size();
  const std::size_t residuals = model.parameter_count() * static_cast<std::size_t>(workers);
  for (const char* text : {"powersgd:2", "topk:0.3", "sign"}) {
    const bool powersgd = std::string(text).starts_with("powersgd");
    for (const std::string& method : powersgd ? training_methods() : std::vector<std::string>{"ring"}) {
      for (const bool feedback : {true, false}) {
        for (const Progress progress : {Progress::calls, Progress::thread}) {
          TrainConfig blocking = compressed_config(method, text, feedback, progress);
          const Outcome reference = overlapped(blocking, model);  // no observer: the blocking step
          for (const std::size_t bucket_bytes : {std::size_t{1} << 30, std::size_t{1}}) {
            if (bucket_bytes == 1 && std::string(text) == "topk:0.3") continue;  // its F is per bucket
            TrainConfig c = blocking;
            c.buckets = true;
            c.bucket_bytes = bucket_bytes;
            const Outcome got = overlapped(c, model);
            CAPTURE(c.sync_name());
            CAPTURE(bucket_bytes);
            CHECK(got.state.size() == compressed_state_size(c, model.layers(), workers));
            if (!powersgd || bucket_bytes > 1 || (workers <= 2 && find_allreduce_method(method)->exact)) {
              CHECK(got.params == reference.params);
              CHECK(std::equal(got.state.end() - static_cast<std::ptrdiff_t>(feedback ? residuals : 0), got.state.end(),
                               reference.state.end() - static_cast<std::ptrdiff_t>(feedback ? residuals : 0)));
              if (!powersgd || bucket_bytes > 1) CHECK(got.state == reference.state);
            } else {
              // ring-bf16 rounds partial sums to bfloat16 where the segment layout puts them: its rounding (2^-8).
              const double bound = find_allreduce_method(method)->exact ? 1e-6 : 1e-2;
              CHECK(test::relative_difference(got.params, reference.params) < bound);
            }
          }
        }
      }
    }
  }
}

// Per-layer buckets, trained: top-k with F = 1 and PowerSGD at full rank leave nothing out of a bucket, so they train
// like dense bucketed SGD, to rounding (the bound of tests/test_compression.cpp's lossless case); a lossy setting is
// farther, so the bound tells them apart. Pipelined, the same against dense pipelined SGD.
TEST_CASE("top-k with F = 1 and PowerSGD at full rank, bucketed or pipelined, train like dense SGD of that mode") {
  const Comm world = Comm::world();
  const TrainTest data = six_blobs();
  struct Case {
    const char* compressor;
    bool lossless;
  };
  for (const bool pipelined : {false, true}) {
    for (const Progress progress : {Progress::calls, Progress::thread}) {
      TrainConfig dense = narrow_mlp("rhd");
      dense.buckets = !pipelined;
      dense.bucket_bytes = 1;  // a bucket per layer
      dense.pipeline = pipelined;
      dense.progress = progress;
      const std::vector<float> reference = train(dense, data, world).params;
      for (const Case k :
           {Case{"topk:1", true}, Case{"powersgd:6", true}, Case{"topk:0.5", false}, Case{"powersgd:2", false}}) {
        TrainConfig c = dense;
        c.compression = test::parsed_compression(k.compressor);
        const std::vector<float> got = train(c, data, world).params;
        if (world.rank() != 0) continue;
        CAPTURE(c.sync_name());
        const double difference = test::relative_difference(got, reference);
        CAPTURE(difference);
        CHECK(k.lossless ? difference < 1e-6 : difference > 1e-5);
      }
    }
  }
}

// The compressors' state and the residuals are checkpointed in either mode (per bucket with --buckets), and a
// resumed run continues bit for bit.
TEST_CASE("with compression, bucketed and pipelined runs resume bit for bit from a checkpoint") {
  const Comm world = Comm::world();
  const TrainTest data = six_blobs();
  for (const bool pipelined : {false, true}) {
    for (const char* text : {"powersgd:2", "topk:0.1", "sign"}) {
      const std::string name = text;
      CAPTURE(name);
      CAPTURE(pipelined);
      const auto dir = test::temp_dir("compress-overlap-resume", world.rank());
      TrainConfig c = narrow_mlp("ring");
      c.compression = test::parsed_compression(text);
      c.buckets = !pipelined;
      c.bucket_bytes = 1;
      c.pipeline = pipelined;
      c.sgd.momentum = 0.9f;
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
}
