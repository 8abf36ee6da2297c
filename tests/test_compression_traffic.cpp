// Bytes on the wire per step of every compressor, read off the traffic layer (tests/traffic) and held to closed
// forms, at P = 2 and P = 4.
#include <doctest/doctest.h>

#include <vector>

#include "collectives/comm.hpp"
#include "collectives/methods.hpp"
#include "collectives/wire_meter.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/compression/compressors.hpp"
#include "trainers/compression/error_feedback.hpp"

using namespace gradsync;

namespace {

constexpr std::size_t kWord = 4;  // every part and every sum is 32-bit words

// What one step sent: point-to-point bytes and messages, and collectives.
struct Seen {
  std::size_t bytes = 0, messages = 0;
  std::vector<traffic::Collective> collectives;
};

// One step of compressor `text` on `comm` with `tensors`' gradient, recorded after the compressor is planned.
Seen one_step(const std::string& text, const char* method, const Comm& comm, const std::vector<Tensor>& tensors) {
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
  const std::vector<Tensor> tensors = model_tensors({30, 12, 5});
  const std::size_t n = tensors.back().offset + tensors.back().size(), t = tensors.size();
  const std::size_t rank = 3, p_words = (12 + 5) * rank + 12 + 5, q_words = (30 + 12) * rank;  // P's + biases; Q's
  for (const Comm& comm : {world.split(world.rank() / 2, world.rank()), world}) {
    const int p = comm.size(), r = comm.rank();
    const std::size_t hops = static_cast<std::size_t>(p - 1);
    CAPTURE(p);
    // top-k: every hop of the all-gather carries one part: its length word, k values, k indices.
    const std::size_t k = (n + 9) / 10;  // ceil(0.1 n)
    const Seen topk = one_step("topk:0.1", "ring", comm, tensors);
    CHECK(topk.bytes == hops * kWord * (1 + 2 * k));
    CHECK(topk.collectives.empty());
    // sign: a part is its length word, one scale per tensor, and the bits, 32 to a word.
    const Seen sign = one_step("sign", "ring", comm, tensors);
    CHECK(sign.bytes == hops * kWord * (1 + t + (n + 31) / 32));
    CHECK(sign.collectives.empty());
    // PowerSGD on the ring: the ring's closed form for the P's (with the biases) and for the Q's.
    const Seen ring = one_step("powersgd:3", "ring", comm, tensors);
    CHECK(ring.bytes ==
          kWord * (traffic::ring_elements_sent(p_words, p, r) + traffic::ring_elements_sent(q_words, p, r)));
    CHECK(ring.collectives.empty());
    // PowerSGD on MPI_Allreduce: two calls, of the P's and of the Q's, and no message of its own.
    const Seen mpi = one_step("powersgd:3", "mpi", comm, tensors);
    CHECK(mpi.messages == 0);
    REQUIRE(mpi.collectives.size() == 2);
    CHECK(mpi.collectives[0].bytes == kWord * p_words);
    CHECK(mpi.collectives[1].bytes == kWord * q_words);
  }
}
