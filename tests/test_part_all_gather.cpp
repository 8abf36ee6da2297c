// The ring all-gather of variable-size parts (collectives/part_all_gather.hpp): every rank's part arrives whole on
// every rank whatever the lengths, and each hop carries a part's own length, not the capacity.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/part_all_gather.hpp"
#include "tests/traffic/traffic.hpp"

using namespace gradsync;

namespace {

// Rank r's part in round `round`: its length varies with the rank and the round (empty parts included).
std::vector<std::int32_t> part_of(int r, int round) {
  std::vector<std::int32_t> part(static_cast<std::size_t>((r * 3 + round) % 6));
  for (std::size_t i = 0; i < part.size(); ++i) part[i] = r * 1000 + round * 100 + static_cast<std::int32_t>(i);
  return part;
}

}  // namespace

TEST_CASE("part all-gather: parts of any length, empty ones too, reach every rank whole" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const int p = world.size();
  PartAllGather gather(world, 5);
  for (int round = 0; round < 4; ++round) {
    const std::vector<std::int32_t> mine = part_of(world.rank(), round);
    std::size_t words_out = 0;  // what this rank forwards: every part but its left neighbour's, with its length word
    for (int r = 0; r < p; ++r)
      if (r != (world.rank() + 1) % p || p == 1) words_out += 1 + part_of(r, round).size();
    traffic::Recording rec;
    gather.run(mine);
    CAPTURE(round);
    for (int r = 0; r < p; ++r) {
      const std::vector<std::int32_t> expected = part_of(r, round);
      const std::span<const std::int32_t> got = gather.part(r);
      CHECK(std::vector<std::int32_t>(got.begin(), got.end()) == expected);
    }
    CHECK(rec.bytes_sent() == (p > 1 ? words_out * sizeof(std::int32_t) : 0));
    CHECK(rec.collectives.empty());
  }
  CHECK_THROWS_AS(gather.run(std::vector<std::int32_t>(6)), std::invalid_argument);  // above capacity, before a message
}

// The nonblocking form: start() copies the part (the caller's buffer is free at once), test() moves the ring on
// until every part has arrived, with the same parts and the same bytes as run(); one exchange in flight at a time.
TEST_CASE("part all-gather: start and test deliver run()'s parts and bytes" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const int p = world.size();
  PartAllGather gather(world, 5);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::int32_t> mine = part_of(world.rank(), round);
    std::size_t words_out = 0;
    for (int r = 0; r < p; ++r)
      if (r != (world.rank() + 1) % p || p == 1) words_out += 1 + part_of(r, round).size();
    traffic::Recording rec;
    gather.start(mine);
    std::fill(mine.begin(), mine.end(), -1);  // the part was copied at start()
    if (p > 1) CHECK_THROWS_AS(gather.start(mine), std::logic_error);
    while (!gather.test()) {
    }
    CHECK(gather.test());  // complete stays complete
    CAPTURE(round);
    for (int r = 0; r < p; ++r) {
      const std::vector<std::int32_t> expected = part_of(r, round);
      const std::span<const std::int32_t> got = gather.part(r);
      CHECK(std::vector<std::int32_t>(got.begin(), got.end()) == expected);
    }
    CHECK(rec.bytes_sent() == (p > 1 ? words_out * sizeof(std::int32_t) : 0));
  }
}
