// bfloat16 on the wire: the conversions, and the ring that sends them ("ring-bf16").
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/bf16.hpp"
#include "collectives/methods.hpp"
#include "model/rng.hpp"

using namespace gradsync;

namespace {

std::uint16_t bf16_of(float f) {
  std::uint16_t h = 0;
  to_bf16(&f, &h, 1);
  return h;
}

float rounded(float f) {
  round_to_bf16(&f, 1);
  return f;
}

// Replicas are compared by their bits: the ring promises identical results, not merely close ones.
std::uint64_t fnv(const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ULL;
  for (float x : v) h = (h ^ std::bit_cast<std::uint32_t>(x)) * 1099511628211ULL;
  return h;
}

}  // namespace

TEST_CASE("bf16 conversion keeps the top 16 bits, rounded to nearest even") {
  CHECK(bf16_of(1.0f) == 0x3f80);
  CHECK(bf16_of(-2.0f) == 0xc000);
  CHECK(bf16_of(0.0f) == 0x0000);
  CHECK(bf16_of(-0.0f) == 0x8000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1); just above goes up.
  CHECK(bf16_of(1.0f + 0x1p-8f) == 0x3f80);
  CHECK(bf16_of(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
  CHECK(bf16_of(1.0f + 3 * 0x1p-8f) == 0x3f82);                 // halfway between 0x3f81 and 0x3f82: to even, up
  CHECK(bf16_of(-1.0f - 0x1p-8f) == 0xbf80);                    // a negative tie: to even too
  CHECK(bf16_of(std::bit_cast<float>(0x3f7fffffu)) == 0x3f80);  // just below 1: the carry reaches the exponent
  CHECK(bf16_of(std::bit_cast<float>(0x00018000u)) == 0x0002);  // a subnormal tie (odd mantissa 1): up to even
  CHECK(bf16_of(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bf16_of(std::numeric_limits<float>::max()) == 0x7f80);  // past bf16's largest: rounds to Inf
  // A NaN whose payload sits only in the dropped bits must stay NaN, not become Inf.
  const float low_nan = std::bit_cast<float>(0x7f800001u);
  REQUIRE(std::isnan(low_nan));
  float back = 0;
  const std::uint16_t h = bf16_of(low_nan);
  from_bf16(&h, &back, 1);
  CHECK(std::isnan(back));
  CHECK(std::isnan(rounded(std::numeric_limits<float>::quiet_NaN())));
  // Small gradients keep their magnitude (float32's exponent range), unlike IEEE half.
  CHECK(rounded(1e-30f) == doctest::Approx(1e-30f).epsilon(1.0 / 256));
  // Integers up to 256 are exact, as the ring's exact-sum checks rely on.
  for (int i = -256; i <= 256; ++i) CHECK(rounded(static_cast<float>(i)) == static_cast<float>(i));
}

TEST_CASE("bf16 rounding error is at most 2^-8 relative, and the vector helpers agree with the scalar one") {
  Rng rng(5, 0);
  std::vector<float> x(4099), widened(x.size()), sum(x.size()), in_place;
  for (float& v : x) v = std::ldexp(2 * rng.uniform() - 1, static_cast<int>(rng.below(60)) - 30);
  std::vector<std::uint16_t> h(x.size());
  to_bf16(x.data(), h.data(), x.size());
  from_bf16(h.data(), widened.data(), x.size());
  in_place = x;
  round_to_bf16(in_place.data(), in_place.size());
  for (std::size_t i = 0; i < x.size(); ++i) sum[i] = 1.0f;
  add_bf16_into(sum.data(), h.data(), x.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    bad += std::fabs(widened[i] - x[i]) > std::fabs(x[i]) * 0x1p-8f;
    bad += widened[i] != in_place[i];
    bad += sum[i] != 1.0f + widened[i];
  }
  CHECK(bad == 0);
}

TEST_CASE("ring-bf16: identical bits on every rank, within bf16 rounding of the exact sum, on any communicator") {
  const Comm world = Comm::world();
  for (int first : {0, 1, 2, 3}) {
    if (first >= world.size()) continue;
    const Comm comm = first == 0 ? world : world.split(world.rank() < first ? 0 : 1, world.rank());
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}, std::size_t{100003}}) {
      for (std::size_t chunk : {std::size_t{2}, std::size_t{6}, kSharedMemoryChunkBytes}) {
        if (chunk < 64 && count > 5000) continue;  // one-element messages over 10^5 elements: slow, nothing new
        AllreduceOptions options;
        options.chunk_bytes = chunk;
        auto ring = make_allreduce("ring-bf16", comm, options);
        CHECK(ring->name() == "ring-bf16");
        std::vector<float> data(count), exact(count);
        Rng rng(7, static_cast<std::uint64_t>(comm.rank()));
        for (float& v : data) v = 2 * rng.uniform() - 1;
        for (std::size_t i = 0; i < count; ++i) exact[i] = data[i];
        make_allreduce("mpi", comm)->run(std::span<float>(exact));
        ring->run(std::span<float>(data));
        // Each of the P-1 hops rounds a partial sum of at most P values in [-1, 1], and the owner rounds once more.
        const double bound = comm.size() * comm.size() * 0x1p-8;
        double worst = 0;
        for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, double(std::fabs(data[i] - exact[i])));
        const auto [lo, hi] = comm.min_max(fnv(data));
        CAPTURE(comm.size());
        CAPTURE(count);
        CAPTURE(chunk);
        CHECK(lo == hi);
        CHECK(worst <= bound);
      }
    }
  }
}

TEST_CASE("ring-bf16 sums small integers exactly and refuses anything but float32 on every rank" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  auto ring = make_allreduce("ring-bf16", world);
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((world.rank() + static_cast<int>(i)) % 4);
  ring->run(std::span<float>(data));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    float expected = 0;
    for (int r = 0; r < world.size(); ++r) expected += static_cast<float>((r + static_cast<int>(i)) % 4);
    wrong += data[i] != expected;
  }
  CHECK(wrong == 0);
  std::vector<double> doubles(10, 1.0);
  CHECK_THROWS_WITH_AS(ring->run(std::span<double>(doubles)), doctest::Contains("float32 only"), std::invalid_argument);
  CHECK_THROWS_AS(ring->run(std::span<double>()), std::invalid_argument);  // even with nothing to send
  ring->run(std::span<float>(data));                                       // still usable afterwards
}
