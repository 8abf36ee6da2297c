// The parameter server with a compressed push (trainers/gradient_compression/compressed_push.hpp): what a server decodes
// is what the worker counted as sent, a lossless setting trains like the dense push, the bytes on the wire have their
// closed form, and the workers' residuals survive a checkpoint in the servers' pieces.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/wire_meter.hpp"
#include "compression/compressors.hpp"
#include "compression_support.hpp"
#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/families/ps/ps_training.hpp"
#include "trainers/gradient_compression/compressed_push.hpp"
#include "trainers/loop/trainer.hpp"

using namespace gradsync;

namespace {

std::vector<ElementRange> key_ranges(std::size_t n, int servers) {
  std::vector<ElementRange> ranges;
  for (int s = 0; s < servers; ++s) ranges.push_back(partition(n, servers, s));
  return ranges;
}

// A parameter-server run of the MLP 20-16-4 on the blobs, 8 steps of batch 16, with `servers` servers.
TrainConfig ps_mlp(int servers, const std::string& compressor) {
  TrainConfig c = test::small_mlp("ps", 16, 8);
  c.servers = servers;
  c.quiet = true;
  if (!compressor.empty()) c.compression = test::parsed_compression(compressor);
  return c;
}

// One fresh directory for every rank: they run on this one host, whose ranks share its checkpoint directory (the
// holders of every piece must be found by the host's lowest rank). Collective over `world`.
std::filesystem::path shared_temp_dir(const std::string& name, const Comm& world) {
  const int pid = world.broadcast(static_cast<int>(::getpid()), 0);
  const auto dir = std::filesystem::temp_directory_path() / ("gradsync-test-" + name + "-" + std::to_string(pid));
  if (world.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  world.barrier();
  return dir;
}

void remove_shared(const std::filesystem::path& dir, const Comm& world) {
  world.barrier();
  if (world.rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace

// Each key range's part, decoded by that range's server, is exactly the worker's contribution there; the residual
// is r' = fl(fl(g + r) - c) (error feedback's arithmetic, error_feedback.hpp), or zero without error feedback. The
// key ranges cut the tensors (3 servers on 12-6-3): sign's scale is then per piece of a tensor.
TEST_CASE("a compressed push decodes on each server to the worker's contribution, and leaves r' = a - c") {
  const std::vector<LayerShape> layers = Mlp({12, 6, 3}).layers();
  const std::size_t n = 12 * 6 + 6 + 6 * 3 + 3;
  for (const char* text : {"topk:0.3", "topk:1", "sign"}) {
    for (bool feedback : {true, false}) {
      CAPTURE(text);
      CAPTURE(feedback);
      const std::vector<ElementRange> ranges = key_ranges(n, 3);
      CompressedPush push(test::parsed_compression(text, feedback), layers, ranges);
      std::vector<float> old(n, 0.0f);
      for (int step = 0; step < 3; ++step) {
        Rng rng(50 + static_cast<std::uint64_t>(step));
        std::vector<float> g(n);
        for (float& x : g) x = 2.0f * rng.uniform() - 1.0f;
        push.encode(g);
        const std::span<const float> c = push.contribution();
        const std::span<const float> r = push.residual();
        CHECK(r.size() == (feedback ? n : 0));
        bool exact = true;
        for (std::size_t i = 0; i < n && feedback; ++i) exact = exact && r[i] == (g[i] + old[i]) - c[i];
        CHECK(exact);
        for (std::size_t s = 0; s < ranges.size(); ++s) {
          const PushDecoder server(test::parsed_compression(text, feedback), layers, ranges[s]);
          CHECK(server.words() == push.part(s).size());
          std::vector<float> decoded(ranges[s].size(), 99.0f);
          server.decode(push.part(s), decoded);
          CHECK(std::ranges::equal(decoded, c.subspan(ranges[s].begin, ranges[s].size())));
        }
        if (std::string(text) == "topk:1") CHECK(std::ranges::equal(c, g));  // nothing left out
        if (feedback) old.assign(r.begin(), r.end());
      }
    }
  }
  // A part of another plan is refused, not read past its end.
  CompressedPush push(test::parsed_compression("topk:0.3"), layers, key_ranges(n, 2));
  const PushDecoder other(test::parsed_compression("topk:0.3"), layers, partition(n, 3, 0));
  std::vector<float> g(n, 1.0f), out(partition(n, 3, 0).size());
  push.encode(g);
  CHECK_THROWS_AS(other.decode(push.part(0), out), std::runtime_error);
}

// Top-k at F = 1 sends every entry, so the servers decode each gradient exactly and sum them in the same rank order:
// the same bits as the dense push, blocking or pipelined, with one or two servers. Top-k at 0.5 moves the model.
TEST_CASE("with the parameter server, top-k with F = 1 trains bit for bit like the dense push") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a server and a worker need 2 ranks");
  const TrainTest data = test::blobs();
  for (int servers = 1; servers <= std::min(2, world.size() - 1); ++servers) {
    for (bool pipeline : {false, true}) {
      CAPTURE(servers);
      CAPTURE(pipeline);
      TrainConfig dense = ps_mlp(servers, ""), lossless = ps_mlp(servers, "topk:1"), lossy = ps_mlp(servers, "topk:0.5");
      for (TrainConfig* c : {&dense, &lossless, &lossy}) c->pipeline = pipeline;
      const std::vector<float> a = train(dense, data, world).params, b = train(lossless, data, world).params,
                               d = train(lossy, data, world).params;
      if (world.rank() != 0) continue;
      CHECK(a == b);
      CHECK(test::relative_difference(a, d) > 1e-4);
    }
  }
}

// One step of the parameter server with a compressed push, read off the traffic layer: each worker sends every server
// one part (top-k: 2 ceil(F |range|) words; sign: a scale per tensor piece in the range, then ceil(|range| / 32) words
// of bits) and gets its dense range back; each server sends every worker its dense range.
TEST_CASE("bytes on the wire per step of a compressed push: parts up, dense key ranges down, at P = 2 and 4" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() == 4, "the closed forms are checked on 4 ranks and on two halves of 2");
  const std::vector<LayerShape> layers = Mlp({30, 12, 5}).layers();
  const std::vector<std::size_t> tensor_ends = {30 * 12, 30 * 12 + 12, 30 * 12 + 12 + 12 * 5, 30 * 12 + 12 + 12 * 5 + 5};
  const std::size_t n = tensor_ends.back();
  // The tensors [begin, end) overlaps, from their ends alone.
  auto pieces = [&](ElementRange range) {
    std::size_t count = 0, begin = 0;
    for (std::size_t end : tensor_ends) {
      count += std::max(begin, range.begin) < std::min(end, range.end) ? 1 : 0;
      begin = end;
    }
    return count;
  };
  const Comm half = world.split(world.rank() / 2, world.rank());
  struct Case {
    const Comm* comm;
    int servers;
  };
  for (const Case k : {Case{&half, 1}, Case{&world, 1}, Case{&world, 2}}) {
    for (const char* text : {"topk:0.1", "sign"}) {
      const Comm& comm = *k.comm;
      const int p = comm.size(), workers = p - k.servers;
      CAPTURE(p);
      CAPTURE(k.servers);
      CAPTURE(text);
      const PsLayout layout{k.servers, workers, n};
      TrainConfig config;
      config.sync = sync_method("ps");
      config.servers = k.servers;
      config.compression = test::parsed_compression(text);
      const Comm server_comm = comm.split(comm.rank() < k.servers ? 0 : MPI_UNDEFINED, comm.rank());
      std::size_t expected = 0, sent = 0, metered = 0;
      if (comm.rank() < k.servers) {
        ParameterServer server(comm, server_comm, layout, config, std::vector<float>(n, 0.0f), {}, layers);
        const std::uint64_t before = bytes_sent_so_far();
        traffic::Recording rec;
        server.serve(1);
        sent = rec.bytes_sent();
        metered = bytes_sent_so_far() - before;
        expected = static_cast<std::size_t>(workers) * layout.key_range(comm.rank()).size() * sizeof(float);
      } else {
        const std::unique_ptr<Synchronizer> sync = make_ps_worker(comm, layout, config, layers);
        std::vector<float> params(n), grads(n);
        for (std::size_t i = 0; i < n; ++i) grads[i] = static_cast<float>((i * 7919 + comm.rank() * 31) % 101) - 50.0f;
        const std::uint64_t before = bytes_sent_so_far();
        traffic::Recording rec;
        sync->step(params, grads);
        sent = rec.bytes_sent();
        metered = bytes_sent_so_far() - before;
        for (int s = 0; s < k.servers; ++s) {
          const ElementRange key = layout.key_range(s);
          const std::size_t words = std::string(text) == "sign" ? pieces(key) + (key.size() + 31) / 32
                                                                : 2 * ((key.size() + 9) / 10);  // ceil(0.1 |range|)
          expected += words * sizeof(std::int32_t);
        }
      }
      CHECK(sent == expected);
      CHECK(metered == sent);  // what train reports as wire bytes (collectives/wire_meter.hpp)
      comm.barrier();
    }
  }
}

// The workers' residuals are training state that only the workers have; the servers keep each worker's key range of
// it in their pieces (after the momentum), so a run stopped at a checkpoint and resumed continues bit for bit, with
// one server or two.
TEST_CASE("with the parameter server and compression, a resumed run continues bit for bit from the checkpoint") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a server and a worker need 2 ranks");
  const TrainTest data = test::blobs();
  for (int servers = 1; servers <= std::min(2, world.size() - 1); ++servers) {
    for (const char* text : {"topk:0.1", "sign"}) {
      CAPTURE(servers);
      CAPTURE(text);
      const auto dir = shared_temp_dir("ps-compress-resume", world);
      TrainConfig c = ps_mlp(servers, text);
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
      remove_shared(dir, world);
    }
  }
}

// Resumed on fewer workers (and with the key ranges cut anew for another number of servers), the workers that remain
// keep their residuals and those of the workers that left are dropped: train() checks the resumed state against the
// checkpoint's, cut to the new size (std::logic_error if it differs).
TEST_CASE("with the parameter server and compression, a run resumes on fewer workers and servers") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, "2 servers and 2 workers, then 1 and 1, need 4 ranks");
  const TrainTest data = test::blobs();
  const auto dir = shared_temp_dir("ps-compress-elastic", world);
  TrainConfig c = ps_mlp(2, "topk:0.1");
  c.sgd.momentum = 0.9f;
  c.checkpoint_dir = dir.string();
  train(c, data, world);
  c.resume = true;
  c.epochs = 2;
  c.servers = 1;
  const Comm fewer = world.split(world.rank() < 2 ? 0 : MPI_UNDEFINED, world.rank());
  if (fewer.valid()) {
    const TrainResult r = train(c, data, fewer);
    if (fewer.rank() == 0) CHECK(r.workers == 1);
  }
  remove_shared(dir, world);
}
