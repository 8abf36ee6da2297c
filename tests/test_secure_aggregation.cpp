// Secure aggregation (privacy/secure_aggregator.hpp) on sub-communicators of 1..size ranks: the exact quantized sum,
// the masked vector's uniformity, the refusal of a round whose masks do not cancel or whose workers are not all
// there, and distributed DP noise summed through the masks.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "collectives/comm.hpp"
#include "model/rng.hpp"
#include "privacy/gaussian_noise.hpp"
#include "privacy/secure_aggregator.hpp"
#include "test_support.hpp"

namespace gradsync {
namespace {

// A fixed key-pair seed per rank and agreement, so the cases are reproducible.
std::array<unsigned char, 32> seed_of(int rank, int agreement) {
  std::array<unsigned char, 32> seed{};
  for (std::size_t i = 0; i < seed.size(); ++i)
    seed[i] = static_cast<unsigned char>(splitmix64(static_cast<std::uint64_t>(rank * 131 + agreement * 7) + i));
  return seed;
}

PairKeys seeded_keys(const Comm& comm, int agreement) {
  const auto seed = seed_of(comm.rank(), agreement);
  return PairKeys::agree(comm, std::span<const unsigned char, 32>(seed));
}

std::vector<float> values_of(int rank, std::size_t count, float spread) {
  Rng rng(17, static_cast<std::uint64_t>(rank));
  std::vector<float> v(count);
  for (float& x : v) x = spread * (2 * rng.uniform() - 1);
  return v;
}

}  // namespace

// In the sweep suite, which tests/CMakeLists.txt runs at 1..8 ranks: P = 1..8.
TEST_CASE("secure aggregation: the masked sum is the quantized plain sum exactly, at 1..size ranks" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  for (int p = 1; p <= world.size(); ++p) {
    CAPTURE(p);
    const Comm comm = world.split(world.rank() < p ? 0 : MPI_UNDEFINED, world.rank());
    if (!comm.valid()) continue;
    const std::size_t count = 3001;
    SecureAggregator agg(comm, seeded_keys(comm, p), FixedPoint(4.0, p), count);
    const std::vector<float> values = values_of(comm.rank(), count, 5.0f);  // some beyond the range of 4
    std::vector<std::uint32_t> codes(count);
    agg.fixed_point().quantize(values, codes);
    std::vector<std::int64_t> plain(count);
    for (std::size_t i = 0; i < count; ++i) plain[i] = FixedPoint::as_signed(codes[i]);
    comm.sum_in_place(plain);
    std::vector<float> sum(count);
    // A refused round must not leave this rank's case early while the other sub-communicators carry on.
    for (std::uint64_t step = 1; step <= 3; ++step) CHECK_NOTHROW(agg.sum(values, sum, step));
    CHECK(agg.clipped() > 0);
    std::size_t wrong = 0, wrong_values = 0;
    for (std::size_t i = 0; i < count; ++i) {
      wrong += agg.wire()[i] != static_cast<std::uint32_t>(plain[i]);
      wrong_values += sum[i] != static_cast<float>(static_cast<double>(plain[i]) / agg.fixed_point().scale());
      CHECK(std::abs(plain[i]) <= 2147483647);  // the headroom: p codes never pass the int32 range
    }
    CHECK(wrong == 0);
    CHECK(wrong_values == 0);
  }
}

TEST_CASE("secure aggregation: one rank's masked vector is uniform in Z_2^32 (chi-square on the top byte)") {
  const Comm comm = Comm::world();
  SKIP_UNLESS(comm.size() >= 2, "masks need two ranks at least");
  const std::size_t count = 256 * 400;
  SecureAggregator agg(comm, seeded_keys(comm, 50), FixedPoint(1.0, comm.size()), count);
  // Gradient-like values: unmasked, their codes' top bytes are all 0x00 or 0xff.
  const std::span<const std::uint32_t> wire = agg.encode(values_of(comm.rank(), count, 0.01f), 1);
  std::vector<double> buckets(256, 0.0);
  for (std::size_t i = 0; i < count; ++i) buckets[wire[i] >> 24] += 1;
  double chi2 = 0;
  const double expected = static_cast<double>(count) / 256;
  for (const double b : buckets) chi2 += (b - expected) * (b - expected) / expected;
  // 255 degrees of freedom: P(chi2 > 330.5) = 0.001 for uniform bytes; the seeds are fixed, so this is not flaky.
  CHECK(chi2 < 330.5);
}

TEST_CASE("secure aggregation: a wrong pair key or a skipped mask makes every rank refuse the round") {
  const Comm comm = Comm::world();
  SKIP_UNLESS(comm.size() >= 2, "masks need two ranks at least");
  const std::size_t count = 500;
  const std::vector<float> values = values_of(comm.rank(), count, 1.0f);
  std::vector<float> sum(count);
  {  // Rank 1 holds the keys of another agreement: its pair keys match nobody's.
    PairKeys first = seeded_keys(comm, 60), second = seeded_keys(comm, 61);
    SecureAggregator agg(comm, comm.rank() == 1 ? std::move(second) : std::move(first), FixedPoint(2, comm.size()),
                         count);
    agg.encode(values, 1);
    agg.allreduce();
    CHECK_THROWS_WITH_AS(agg.decode(sum), doctest::Contains("refused"), std::runtime_error);
  }
  {  // Rank 1 leaves out its mask toward rank 0 (subtracted by encode: added back here).
    SecureAggregator agg(comm, seeded_keys(comm, 62), FixedPoint(2, comm.size()), count);
    const std::span<std::uint32_t> wire = agg.encode(values, 1);
    if (comm.rank() == 1) {
      std::vector<std::uint32_t> stream(wire.size());
      apply_pair_mask(wire, agg.keys().key(0), 1, +1, stream);
    }
    agg.allreduce();
    CHECK_THROWS_WITH_AS(agg.decode(sum), doctest::Contains("refused"), std::runtime_error);
    // The next round, all masks in place, opens.
    CHECK_NOTHROW(agg.sum(values, sum, 2));
  }
}

TEST_CASE("secure aggregation: a step's masks are used once, and a round without all keyed workers is refused") {
  const Comm comm = Comm::world();
  SecureAggregator agg(comm, seeded_keys(comm, 70), FixedPoint(1, comm.size()), 10);
  const std::vector<float> values(10, 0.5f);
  agg.encode(values, 4);
  CHECK_THROWS_AS(agg.encode(values, 4), std::logic_error);
  CHECK_THROWS_AS(agg.encode(values, 3), std::logic_error);
  agg.encode(values, 5);
  CHECK(round_refusal(4, 4).empty());
  CHECK(round_refusal(4, 3).find("3 of the 4 workers") != std::string::npos);
  SKIP_UNLESS(comm.size() >= 2, "a lost worker needs two ranks at least");
  PairKeys keys = seeded_keys(comm, 71);  // agreed by every rank; then the last one is lost
  const Comm survivors = comm.split(comm.rank() + 1 < comm.size() ? 0 : MPI_UNDEFINED, comm.rank());
  if (survivors.valid())
    CHECK_THROWS_WITH_AS(SecureAggregator(survivors, std::move(keys), FixedPoint(1, survivors.size()), 10),
                         doctest::Contains("refused"), std::runtime_error);
}

TEST_CASE("secure aggregation with distributed DP: the noise shares sum, through the masks, to sigma C") {
  const Comm comm = Comm::world();
  const double sigma = 1.1, clip = 1.0;
  const std::size_t count = 100000;
  const double share = noise_share_std(sigma, clip, comm.size());
  SecureAggregator agg(comm, seeded_keys(comm, 80), FixedPoint(10 * share, comm.size()), count);
  std::vector<float> noised(count, 0.0f), sum(count);
  GaussianNoise(5, comm.rank()).add(noised, share);
  CHECK_NOTHROW(agg.sum(noised, sum, 1));
  double var = 0;
  for (const float v : sum) var += static_cast<double>(v) * v / count;
  CHECK(var == doctest::Approx(sigma * clip * sigma * clip).epsilon(0.03));
}

}  // namespace gradsync
