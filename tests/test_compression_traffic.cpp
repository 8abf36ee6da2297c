// Bytes on the wire per step of every compressor, read off the traffic layer (tests/traffic) and held to closed
// forms, at P = 2 and P = 4: the compressor alone, and the whole compressed exchange as train runs it, blocking,
// bucketed and pipelined.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/methods.hpp"
#include "collectives/wire_meter.hpp"
#include "compression/compressors.hpp"
#include "compression/error_feedback.hpp"
#include "model/mlp.hpp"
#include "model/sgd.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/loop/make_synchronizer.hpp"
#include "trainers/overlap/gradient_jobs.hpp"

using namespace gradsync;

namespace {

constexpr std::size_t kWord = 4;  // every part and every sum is 32-bit words

// What one step sent: point-to-point bytes and messages, and collectives.
struct StepTraffic {
  std::size_t bytes = 0, messages = 0;
  std::vector<traffic::Collective> collectives;
};

// One step of compressor `text` on `comm` with `tensors`' gradient, recorded after the compressor is planned.
StepTraffic one_step(const std::string& text, const char* method, const Comm& comm, const std::vector<Tensor>& tensors) {
  std::string problem;
  const CompressionChoice c = *parse_compression(text, problem);
  AllreduceOptions options;
  options.check_agreement = false;  // the payload alone
  const CompressorSetup setup{comm, find_allreduce_method(method), options, tensors, c.param, 7};
  const std::size_t n = tensors.back().offset + tensors.back().size();
  ErrorFeedback ef(c.compressor->make(setup), n, true);
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>((i * 7919 + comm.rank() * 31) % 101) - 50.0f;
  const std::uint64_t before = bytes_sent_so_far();
  traffic::Recording rec;
  ef.step(g);
  CHECK(bytes_sent_so_far() - before == rec.bytes_sent());  // what train reports as wire bytes (wire_meter.hpp)
  return {rec.bytes_sent(), rec.sends.size(), rec.collectives};
}

}  // namespace

TEST_CASE("bytes on the wire per step: each compressor's closed form at P = 2 and 4" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() == 4, "the closed forms are checked on 4 ranks and on two halves of 2");
  const std::vector<Tensor> tensors = model_tensors(Mlp({30, 12, 5}).layers());
  const std::size_t n = tensors.back().offset + tensors.back().size(), t = tensors.size();
  const std::size_t rank = 3, p_words = (12 + 5) * rank + 12 + 5, q_words = (30 + 12) * rank;  // P's + biases; Q's
  for (const Comm& comm : {world.split(world.rank() / 2, world.rank()), world}) {
    const int p = comm.size(), r = comm.rank();
    const std::size_t hops = static_cast<std::size_t>(p - 1);
    CAPTURE(p);
    // top-k: every hop of the all-gather carries one part: its length word, k values, k indices.
    const std::size_t k = (n + 9) / 10;  // ceil(0.1 n)
    const StepTraffic topk = one_step("topk:0.1", "ring", comm, tensors);
    CHECK(topk.bytes == hops * kWord * (1 + 2 * k));
    CHECK(topk.collectives.empty());
    // sign: a part is its length word, one scale per tensor, and the bits, 32 to a word.
    const StepTraffic sign = one_step("sign", "ring", comm, tensors);
    CHECK(sign.bytes == hops * kWord * (1 + t + (n + 31) / 32));
    CHECK(sign.collectives.empty());
    // PowerSGD on the ring: the ring's closed form for the P's (with the biases) and for the Q's.
    const StepTraffic ring = one_step("powersgd:3", "ring", comm, tensors);
    CHECK(ring.bytes ==
          kWord * (traffic::ring_elements_sent(p_words, p, r) + traffic::ring_elements_sent(q_words, p, r)));
    CHECK(ring.collectives.empty());
    // PowerSGD on MPI_Allreduce: two calls, of the P's and of the Q's, and no message of its own.
    const StepTraffic mpi = one_step("powersgd:3", "mpi", comm, tensors);
    CHECK(mpi.messages == 0);
    REQUIRE(mpi.collectives.size() == 2);
    CHECK(mpi.collectives[0].bytes == kWord * p_words);
    CHECK(mpi.collectives[1].bytes == kWord * q_words);
  }
}

namespace {

// The agreement check before each of an allreduce object's nonblocking calls (collectives/agreement.hpp): ceil(log2 P)
// rounds of one message of 8 int64 values each.
std::size_t agreement_bytes(int p) {
  return 8 * sizeof(std::int64_t) * static_cast<std::size_t>(std::bit_width(static_cast<unsigned>(p - 1)));
}

// PowerSGD:3's two buffers for a bucket's tensors: each matrix's P (m x R) then the vectors, dense; each matrix's Q
// (n x R).
constexpr std::size_t kRank = 3;
std::size_t p_words(std::span<const Tensor> bucket) {
  std::size_t words = 0;
  for (const Tensor& t : bucket) words += t.matrix() ? t.rows * kRank : t.size();
  return words;
}
std::size_t q_words(std::span<const Tensor> bucket) {
  std::size_t words = 0;
  for (const Tensor& t : bucket) words += t.matrix() ? t.cols * kRank : 0;
  return words;
}

// What rank r of p sends per step to sum the gradient of `bucket`'s tensors (one bucket, or the whole model) with
// `compressor` on the ring, from docs/compression.md's description: a part of the all-gather compressors crosses
// P - 1 hops with its length word; PowerSGD allreduces its P's with the bucket's vectors, then its Q's, each call
// checked for agreement first.
std::size_t closed_form(const std::string& compressor, std::span<const Tensor> bucket, int p, int r) {
  const std::size_t hops = static_cast<std::size_t>(p - 1);
  std::size_t n = 0;
  for (const Tensor& t : bucket) n += t.size();
  if (compressor == "topk:0.1") return hops * kWord * (1 + 2 * ((n + 9) / 10));         // ceil(0.1 n) values and indices
  if (compressor == "sign") return hops * kWord * (1 + bucket.size() + (n + 31) / 32);  // scales, then bits
  return kWord *
             (traffic::ring_elements_sent(p_words(bucket), p, r) + traffic::ring_elements_sent(q_words(bucket), p, r)) +
         2 * agreement_bytes(p);
}

// The tensors of layers [first, last) of `tensors` (a layer's weights, then its bias).
std::vector<Tensor> layers(const std::vector<Tensor>& tensors, std::size_t first, std::size_t last) {
  return {tensors.begin() + static_cast<std::ptrdiff_t>(2 * first),
          tensors.begin() + static_cast<std::ptrdiff_t>(2 * last)};
}

struct Counted {
  std::size_t bytes = 0;
  std::vector<traffic::Collective> collectives;
};

// `steps` steps of config `c`'s synchronizer on `comm` (every rank of it a worker) for an MLP of `sizes`, pipelined
// ones drained: what this rank sent, counted by the traffic layer, which must agree with the wire meter train reads.
Counted synchronized(const TrainConfig& c, const Comm& comm, const std::vector<std::size_t>& sizes, int steps) {
  const Mlp model(sizes);
  const std::size_t n = model.parameter_count();
  Sgd sgd(c.sgd, n);
  const std::unique_ptr<Synchronizer> sync = make_synchronizer(c, {comm, comm, sgd, model.layers(), n});
  std::vector<float> params(n, 0.5f);
  std::vector<std::vector<float>> grads(2, std::vector<float>(n));
  const std::uint64_t before = bytes_sent_so_far();
  traffic::Recording rec;
  for (int step = 0; step < steps; ++step) {
    std::vector<float>& g = grads[static_cast<std::size_t>(step % sync->gradient_buffers())];
    for (std::size_t i = 0; i < n; ++i)
      g[i] = static_cast<float>((i * 7919 + static_cast<std::size_t>(comm.rank() * 31 + step)) % 101) - 50.0f;
    sync->step(params, g);
  }
  sync->drain(params);
  CHECK(bytes_sent_so_far() - before == rec.bytes_sent());
  return {rec.bytes_sent(), rec.collectives};
}

}  // namespace

// Compressed exchanges as train runs them (trainers/gradient_compression/compressed_jobs.hpp): each bucket of --buckets
// has a compressor planned on its own tensors, so a step sends the closed form of each bucket, summed; blocking and
// pipelined runs send the whole model's. Buckets here: one per layer, and the two upper layers together (a bucket
// closes once it holds bucket_bytes, from the output layer down).
TEST_CASE("bytes on the wire per step, bucketed and pipelined: the sum over buckets of each compressor's closed form" *
          doctest::test_suite("needs_4_ranks")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() == 4, "the closed forms are checked on 4 ranks and on two halves of 2");
  const std::vector<std::size_t> sizes = {30, 12, 8, 5};
  const std::vector<Tensor> tensors = model_tensors(Mlp(sizes).layers());
  const std::size_t upper_two = kWord * (8 * 12 + 8 + 5 * 8 + 5);
  struct Mode {
    const char* name;
    bool buckets, pipeline;
    std::size_t bucket_bytes;
    std::vector<std::vector<Tensor>> expected;  // the buckets, output layer's first
  };
  const std::vector<Mode> modes = {
      {"blocking", false, false, 0, {tensors}},
      {"pipelined", false, true, 0, {tensors}},
      {"a bucket per layer", true, false, 1, {layers(tensors, 2, 3), layers(tensors, 1, 2), layers(tensors, 0, 1)}},
      {"two buckets", true, false, upper_two, {layers(tensors, 1, 3), layers(tensors, 0, 1)}}};
  constexpr int kSteps = 3;
  for (const Comm& comm : {world.split(world.rank() / 2, world.rank()), world}) {
    const int p = comm.size(), r = comm.rank();
    for (const char* compressor : {"topk:0.1", "sign", "powersgd:3"}) {
      for (const Mode& mode : modes) {
        CAPTURE(p);
        CAPTURE(std::string(compressor));
        CAPTURE(std::string(mode.name));
        TrainConfig c;
        c.sync = sync_method("ring");
        std::string problem;
        c.compression = *parse_compression(compressor, problem);
        c.buckets = mode.buckets;
        c.bucket_bytes = mode.bucket_bytes;
        c.pipeline = mode.pipeline;
        const Mlp model(sizes);
        const std::vector<ElementRange> ranges =
            gradient_ranges(c, model.layers(), model.parameter_count());  // the buckets the sums are over
        REQUIRE(ranges.size() == mode.expected.size());
        std::size_t per_step = 0;
        for (std::size_t b = 0; b < ranges.size(); ++b) {
          const std::vector<Tensor>& bucket = mode.expected[b];
          CHECK(ranges[b].begin == bucket.front().offset);
          CHECK(ranges[b].end == bucket.back().offset + bucket.back().size());
          per_step += closed_form(compressor, bucket, p, r);
        }
        CHECK(synchronized(c, comm, sizes, kSteps).bytes == kSteps * per_step);
        if (!std::string(compressor).starts_with("powersgd")) continue;
        // On MPI_Iallreduce: per bucket and step, its P's and vectors, then its Q's, and only the checks' messages.
        c.sync = sync_method("mpi");
        const Counted mpi = synchronized(c, comm, sizes, kSteps);
        CHECK(mpi.bytes == kSteps * ranges.size() * 2 * agreement_bytes(p));
        REQUIRE(mpi.collectives.size() == kSteps * ranges.size() * 2);
        for (std::size_t i = 0; i < mpi.collectives.size(); ++i) {
          const std::vector<Tensor>& bucket = mode.expected[(i / 2) % ranges.size()];
          CHECK(mpi.collectives[i].bytes == kWord * (i % 2 == 0 ? p_words(bucket) : q_words(bucket)));
        }
      }
    }
  }
}
