// The collectives' sums, errors and method table. Cases in the doctest suite "sweep" hold for any number of ranks
// and run at P = 1 .. 8 (tests/CMakeLists.txt); the rest run at the suite's 4 ranks only.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/agreement.hpp"
#include "collectives/allreduce.hpp"
#include "collectives/methods.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"

using namespace gradsync;

namespace {

// Integer-valued data: every partial sum is exact in float, so "equal" means bit-equal.
template <class T>
T value(int rank, std::size_t i, int call) {
  return static_cast<T>((rank + 1) * static_cast<int>(i % 13 + 1) + call);
}

struct Case {
  std::string method;
  // Its own options: the server layout (servers, server_contributes), hosts emulated as groups of ranks_per_host
  // consecutive ranks (two-level methods).
  MethodOptions own;
  bool chunked = false;    // the method reads chunk_bytes: worth sweeping it
  bool segmented = false;  // the method reads segment_bytes: worth running it cut into pieces too
};

// The methods the grids cover: every one with its default options, or the method specs GRADSYNC_TEST_METHODS lists
// (a comma list: "star,star:root=2"), so that a method can be run through the grids alone, with options of its own
// (tests/structure/toy_method.py does, for the toy of docs/extending.md).
std::vector<std::pair<std::string, MethodOptions>> grid_methods() {
  std::vector<std::pair<std::string, MethodOptions>> chosen;
  const char* only = std::getenv("GRADSYNC_TEST_METHODS");
  const std::string_view list = only ? only : "";
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    chosen.push_back(parse_method_spec(list.substr(at, comma - at)));
    at = comma + 1;
  }
  if (chosen.empty())
    for (const AllreduceMethod& m : allreduce_method_table()) chosen.emplace_back(std::string(m.name), MethodOptions{});
  return chosen;
}

// The grid's cases for `m` with options `own` on `ranks` ranks: the server layouts that fit, emulated hosts.
void add_cases(std::vector<Case>& cases, const AllreduceMethod& m, const MethodOptions& own, int ranks) {
  const auto with = [&](std::string_view key, int value) {
    Case c{std::string(m.name), own, m.chunked, m.segmented};
    c.own.set(key, value);
    return c;
  };
  switch (m.servers) {
    case ServerRanks::none:
      cases.push_back({std::string(m.name), own, m.chunked, m.segmented});
      // One node, so the found hosts are one host: emulate several, with one and with two ranks each.
      if (m.two_level)
        for (int per_host : {1, 2})
          if (per_host < ranks && ranks % per_host == 0) cases.push_back(with(kRanksPerHostOption, per_host));
      break;
    case ServerRanks::one:
      cases.push_back({std::string(m.name), own, m.chunked, m.segmented});
      cases.push_back(with(kServerContributesOption, 1));
      break;
    case ServerRanks::some:
      for (int k = 1; k < ranks; ++k) cases.push_back(with(kServersOption, k));
      if (ranks > 2) {
        Case contributing = with(kServersOption, 2);
        contributing.own.set(kServerContributesOption, 1);
        cases.push_back(contributing);
      }
      if (ranks == 1) cases.push_back(with(kServersOption, 1));
      break;
  }
}

// Every exact method of the grid (grid_methods), with the server layouts that fit on `ranks` ranks.
std::vector<Case> all_methods(int ranks) {
  std::vector<Case> cases;
  for (const auto& [name, own] : grid_methods()) {
    const AllreduceMethod* m = find_allreduce_method(name);
    REQUIRE_MESSAGE(m, "GRADSYNC_TEST_METHODS names a method that is not in the table: ", name);
    if (m->exact) add_cases(cases, *m, own, ranks);  // rounded methods have tests of their own (test_bf16.cpp)
  }
  return cases;
}

// The chunk sizes worth running `c` with: a sweep for chunked methods, one value for the others.
std::vector<std::size_t> chunks_for(const Case& c, std::vector<std::size_t> sweep) {
  if (!c.chunked) sweep.resize(1);
  return sweep;
}

// The segment sizes: automatic (whole messages on one node) and, for segmented methods, pieces of 12 bytes (three
// floats or one double and a half: pieces that never line up with chunks or segments of the buffer).
std::vector<std::size_t> segments_for(const Case& c) {
  if (!c.segmented) return {kAutoSegmentBytes};
  return {kAutoSegmentBytes, 12};
}

// How a test drives a reduction: blocking run(), or the nonblocking form completed by wait() or by polling test(),
// or started held (start_held: polled while held, then released) and polled.
enum class Drive { run, start_wait, start_test, held_test };
constexpr Drive kDrives[] = {Drive::run, Drive::start_wait, Drive::start_test, Drive::held_test};

template <class T>
void reduce_with(Allreduce& allreduce, std::span<T> data, Drive drive) {
  if (drive == Drive::run) return allreduce.run(data);
  if (drive == Drive::held_test) {
    allreduce.start_held(data);
    for (int i = 0; i < 3; ++i) REQUIRE_FALSE(allreduce.test());  // held: nothing completes before release()
    allreduce.release();
  } else {
    allreduce.start(data);
  }
  if (drive == Drive::start_wait) return allreduce.wait();
  while (!allreduce.test()) {
  }
}

// Runs `method` twice on the same buffer and counts elements that differ from the exact sum on this rank.
template <class T>
std::size_t wrong_elements(const Comm& comm, const Case& c, std::size_t count, std::size_t chunk_bytes,
                           Drive drive = Drive::run, std::size_t segment_bytes = kAutoSegmentBytes,
                           std::size_t ring_window = kAutoRingWindow) {
  AllreduceOptions options;
  options.chunk_bytes = chunk_bytes;
  options.segment_bytes = segment_bytes;
  options.ring_window = ring_window;
  options.own = c.own;
  auto allreduce = make_allreduce(c.method, comm, options);
  std::vector<T> data(count);
  std::size_t wrong = 0;
  for (int call = 0; call < 2; ++call) {
    for (std::size_t i = 0; i < count; ++i) data[i] = value<T>(comm.rank(), i, call);
    reduce_with(*allreduce, std::span<T>(data), drive);
    const ElementRange range = allreduce->result_range(comm.rank(), count);
    for (std::size_t i = range.begin; i < range.end; ++i) {
      T expected = 0;
      for (int r = 0; r < comm.size(); ++r)
        if (allreduce->contributes(r)) expected += value<T>(r, i, call);
      wrong += data[i] != expected;
    }
  }
  return wrong;
}

}  // namespace

TEST_CASE("partition cuts a range into pieces that differ by at most one") {
  for (std::size_t count : {0, 1, 3, 7, 100}) {
    for (std::size_t parts : {1, 2, 3, 4, 5}) {
      std::size_t next = 0;
      for (std::size_t i = 0; i < parts; ++i) {
        const ElementRange r = partition(count, parts, i);
        CHECK(r.begin == next);
        CHECK(r.size() >= count / parts);
        CHECK(r.size() <= count / parts + 1);
        next = r.end;
      }
      CHECK(next == count);
    }
  }
}

TEST_CASE("every method sums exactly: counts, chunk sizes, repeated calls, blocking and nonblocking") {
  const Comm world = Comm::world();
  const std::size_t p = static_cast<std::size_t>(world.size());
  for (const Case& c : all_methods(world.size())) {
    for (std::size_t count :
         {std::size_t{0}, std::size_t{1}, std::size_t{3}, p, p + 1, 64 * p - 1, 64 * p + 1, 1024 * p + 1}) {
      for (std::size_t chunk : chunks_for(c, {std::size_t{4}, std::size_t{1024}, kSharedMemoryChunkBytes})) {
        for (std::size_t segment : segments_for(c)) {
          for (Drive drive : kDrives) {
            CAPTURE(c.method);
            CAPTURE(c.own.text());
            CAPTURE(count);
            CAPTURE(chunk);
            CAPTURE(segment);
            CAPTURE(static_cast<int>(drive));
            CHECK(wrong_elements<float>(world, c, count, chunk, drive, segment) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("the ring sums exactly with one, two and three exchanges in flight") {
  const Comm world = Comm::world();
  const std::size_t p = static_cast<std::size_t>(world.size());
  for (std::size_t window : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    for (std::size_t count : {std::size_t{1}, p + 1, 64 * p - 1, 1024 * p + 1}) {
      for (std::size_t chunk : {std::size_t{4}, std::size_t{64}, kSharedMemoryChunkBytes}) {
        for (Drive drive : kDrives) {
          CAPTURE(window);
          CAPTURE(count);
          CAPTURE(chunk);
          CAPTURE(static_cast<int>(drive));
          const Case ring{"ring", {}, true};
          CHECK(wrong_elements<float>(world, ring, count, chunk, drive, kAutoSegmentBytes, window) == 0);
        }
      }
    }
  }
}

TEST_CASE("ranks planned with different ring windows fail loudly, as for the chunk size") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "ranks that disagree need 2 ranks");
  AllreduceOptions mine;
  mine.ring_window = world.rank() == 0 ? 1 : 2;
  std::vector<float> data(1000, 1.0f);
  CHECK_THROWS_AS(make_allreduce("ring", world, mine)->run(std::span<float>(data)), MismatchError);
}

// The grids above, thinned to run at every P (the full ones take minutes at P = 8 on two cores): every method at
// counts on both sides of P and of a chunk, a ring of several chunks per step, pieces and whole messages, with the
// drive, the element type and the ring's window rotating through the cells so that each meets every method without
// multiplying the cells.
TEST_CASE("at any P every method sums exactly: counts around P, chunks, pieces, windows, drives and types" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const std::size_t p = static_cast<std::size_t>(world.size());
  std::size_t cell = 0;
  for (const Case& c : all_methods(world.size())) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, p + 1, 64 * p + 1}) {
      for (std::size_t chunk : chunks_for(c, {std::size_t{64}, kSharedMemoryChunkBytes})) {
        for (std::size_t segment : segments_for(c)) {
          const Drive drive = kDrives[cell % std::size(kDrives)];
          const std::size_t window = 1 + cell / 4 % 3;
          CAPTURE(c.method);
          CAPTURE(c.own.text());
          CAPTURE(count);
          CAPTURE(chunk);
          CAPTURE(segment);
          CAPTURE(window);
          CAPTURE(static_cast<int>(drive));
          CAPTURE(cell % 4);
          switch (cell++ % 4) {
            case 0: CHECK(wrong_elements<float>(world, c, count, chunk, drive, segment, window) == 0); break;
            case 1: CHECK(wrong_elements<double>(world, c, count, chunk, drive, segment, window) == 0); break;
            case 2: CHECK(wrong_elements<std::int32_t>(world, c, count, chunk, drive, segment, window) == 0); break;
            default: CHECK(wrong_elements<std::int64_t>(world, c, count, chunk, drive, segment, window) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("every method sums exactly for large counts (2^20 + 7 floats)") {
  const Comm world = Comm::world();
  for (const Case& c : all_methods(world.size())) {
    for (std::size_t chunk : chunks_for(c, {std::size_t{1024}, kSharedMemoryChunkBytes})) {
      CAPTURE(c.method);
      CAPTURE(c.own.text());
      CAPTURE(chunk);
      for (Drive drive : kDrives) CHECK(wrong_elements<float>(world, c, (std::size_t{1} << 20) + 7, chunk, drive) == 0);
    }
  }
}

TEST_CASE("every method sums double, int32 and int64") {
  const Comm world = Comm::world();
  for (const Case& c : all_methods(world.size())) {
    for (std::size_t count : {std::size_t{5}, std::size_t{1001}}) {
      CAPTURE(c.method);
      CAPTURE(count);
      for (std::size_t segment : segments_for(c)) {
        CAPTURE(segment);
        for (Drive drive : kDrives) {
          CHECK(wrong_elements<double>(world, c, count, 64, drive, segment) == 0);
          CHECK(wrong_elements<std::int32_t>(world, c, count, 64, drive, segment) == 0);
          CHECK(wrong_elements<std::int64_t>(world, c, count, 64, drive, segment) == 0);
        }
      }
    }
  }
}

TEST_CASE("every method works on split sub-communicators of 1, 2 and 3 ranks") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "splitting off a sub-communicator needs 2 ranks");
  for (int first : {1, 2, 3}) {
    if (first >= world.size()) continue;  // the larger splits from 3 and 4 ranks on
    const Comm sub = world.split(world.rank() < first ? 0 : 1, world.rank());
    for (const Case& c : all_methods(sub.size())) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
        for (std::size_t chunk : chunks_for(c, {std::size_t{4}, kSharedMemoryChunkBytes})) {
          CAPTURE(sub.size());
          CAPTURE(c.method);
          CAPTURE(c.own.text());
          CAPTURE(count);
          for (std::size_t segment : segments_for(c)) {
            CAPTURE(segment);
            for (Drive drive : kDrives) CHECK(wrong_elements<float>(sub, c, count, chunk, drive, segment) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("ring and parameter server agree with MPI_Allreduce on random floats" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const std::size_t count = 100003;
  std::vector<float> mine(count);
  Rng rng(99, static_cast<std::uint64_t>(world.rank()));
  for (float& x : mine) x = 2 * rng.uniform() - 1;
  std::vector<float> reference = mine;
  make_allreduce("mpi", world)->run(std::span<float>(reference));
  for (const Case& c : all_methods(world.size())) {
    AllreduceOptions options;
    options.own = c.own;
    if (find_allreduce_method(c.method)->takes(kServerContributesOption))  // so that every rank's data is in the
      options.own.set(kServerContributesOption, 1);                        // sum, as in MPI_Allreduce
    auto allreduce = make_allreduce(c.method, world, options);
    std::vector<float> data = mine;
    allreduce->run(std::span<float>(data));
    double worst = 0;
    for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, double(std::fabs(data[i] - reference[i])));
    CAPTURE(c.method);
    CAPTURE(c.own.text());
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("sharded parameter servers give bit-identical sums to the central one" * doctest::test_suite("sweep")) {
  // With contributing servers both sum the same ranks' data, in rank order, so the bits must match.
  const Comm world = Comm::world();
  std::vector<float> mine(54321);
  Rng rng(5, static_cast<std::uint64_t>(world.rank()));
  for (float& x : mine) x = rng.uniform();
  AllreduceOptions options;
  options.own.set(kServerContributesOption, 1);
  std::vector<float> central = mine;
  make_allreduce("ps", world, options)->run(std::span<float>(central));
  for (int k = 2; k < world.size(); ++k) {
    options.own.set(kServersOption, k);
    std::vector<float> sharded = mine;
    make_allreduce("ps-sharded", world, options)->run(std::span<float>(sharded));
    CAPTURE(k);
    CHECK(sharded == central);
  }
}

TEST_CASE("a count mismatch is an error on every rank, naming the ranks, never a hang" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a count mismatch needs 2 ranks");
  for (const Case& c : all_methods(world.size())) {
    auto allreduce = make_allreduce(c.method, world, {});
    std::vector<float> data(world.rank() == world.size() - 1 ? 999 : 1000, 1.0f);
    CAPTURE(c.method);
    const std::string last = "rank " + std::to_string(world.size() - 1) + ": 999 x float";
    CHECK_THROWS_WITH_AS(allreduce->run(std::span<float>(data)), doctest::Contains(last.c_str()), MismatchError);
    // The collective is usable again afterwards.
    std::vector<float> ok(10, 1.0f);
    CHECK_NOTHROW(allreduce->run(std::span<float>(ok)));
  }
}

TEST_CASE("a type mismatch is an error on every rank" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a type mismatch needs 2 ranks");
  auto allreduce = make_allreduce("ring", world, {});
  std::vector<float> f(16, 1.0f);
  std::vector<double> d(16, 1.0);
  if (world.rank() == 0)
    CHECK_THROWS_WITH_AS(allreduce->run(std::span<double>(d)), doctest::Contains("rank 0: 16 x double"), MismatchError);
  else
    CHECK_THROWS_WITH_AS(allreduce->run(std::span<float>(f)), doctest::Contains("rank 1: 16 x float"), MismatchError);
}

TEST_CASE("Comm::min_max gives every rank the smallest and largest value passed" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const std::uint64_t mine = 1000 + 7 * static_cast<std::uint64_t>(world.rank());
  const auto [lo, hi] = world.min_max(mine);
  CHECK(lo == 1000);
  CHECK(hi == 1000 + 7 * static_cast<std::uint64_t>(world.size() - 1));
  const auto [same_lo, same_hi] = world.min_max(~std::uint64_t{0});
  CHECK(same_lo == same_hi);
}

TEST_CASE("Comm::all_ok is true on every rank exactly when every rank passed true" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  CHECK(world.all_ok(true));
  for (int failing = 0; failing < world.size(); ++failing) {
    CAPTURE(failing);
    CHECK_FALSE(world.all_ok(world.rank() != failing));  // one rank's problem reaches all of them
  }
  CHECK_FALSE(world.all_ok(false));
}

TEST_CASE("unknown methods and impossible server counts are rejected up front" * doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  CHECK_THROWS_WITH_AS(make_allreduce("tree", world), doctest::Contains("unknown allreduce method 'tree'"),
                       std::invalid_argument);
  AllreduceOptions options;
  options.own.set(kServersOption, world.size());
  if (world.size() > 1)
    CHECK_THROWS_WITH_AS(make_allreduce("ps-sharded", world, options), doctest::Contains("server rank(s) need"),
                         std::invalid_argument);
  // A method's own options: only the keys its entry declares, within their ranges, named in the refusal.
  CHECK_THROWS_WITH_AS(make_allreduce("ps", world, options), doctest::Contains("ps: unknown option 'servers'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_allreduce("ring:servers=2", world),
                       doctest::Contains("ring: unknown option 'servers' (ring takes no options of its own)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_allreduce("ps-sharded:sever=1", world),
                       doctest::Contains("unknown option 'sever' (its options: servers, server_contributes)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_allreduce("ps-sharded:servers=0", world), doctest::Contains("servers=0 is out of range"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_allreduce("hier:ranks_per_host", world), doctest::Contains("is not key=value"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(make_allreduce("hier:ranks_per_host=two", world), doctest::Contains("not a whole number"),
                       std::invalid_argument);
}

// The test job runs on one machine, so every communicator here shares a node: the automatic chunk, segment and
// window must resolve to the shared-memory values, the same on every rank, and explicit ones be kept as given.
TEST_CASE("the ring's automatic chunk size, segments and window are the shared-memory ones on a single node" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  CHECK(world.on_one_node());
  CHECK(make_allreduce("ring", world)->options().chunk_bytes == kSharedMemoryChunkBytes);
  CHECK(make_allreduce("ring", world)->options().segment_bytes == kWholeMessages);
  CHECK(make_allreduce("ring", world)->options().ring_window == kSharedMemoryRingWindow);
  AllreduceOptions explicit_window;
  explicit_window.ring_window = 3;
  CHECK(make_allreduce("ring", world, explicit_window)->options().ring_window == 3);
  AllreduceOptions explicit_chunk;
  explicit_chunk.chunk_bytes = 4096;
  CHECK(make_allreduce("ring", world, explicit_chunk)->options().chunk_bytes == 4096);
  const Comm pair = world.split(world.rank() / 2, world.rank());
  CHECK(make_allreduce("ring", pair)->options().chunk_bytes == kSharedMemoryChunkBytes);
}

TEST_CASE("ranks planned with different chunk sizes or server layouts fail loudly instead of hanging" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "the server layout mismatch (2 servers beside a worker) needs 3 ranks");
  AllreduceOptions mine;
  mine.chunk_bytes = world.rank() == 0 ? 1024 : 4096;
  std::vector<float> data(100000, 1.0f);
  CHECK_THROWS_WITH_AS(make_allreduce("ring", world, mine)->run(std::span<float>(data)),
                       doctest::Contains("other method or options"), MismatchError);
  AllreduceOptions layout;
  layout.own.set(kServersOption, world.rank() == 1 ? 2 : 1);
  CHECK_THROWS_AS(make_allreduce("ps-sharded", world, layout)->run(std::span<float>(data)), MismatchError);
}

TEST_CASE("the nonblocking form reports a count mismatch from wait() on every rank and stays usable" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a count mismatch needs 2 ranks");
  for (const Case& c : all_methods(world.size())) {
    auto allreduce = make_allreduce(c.method, world, {});
    std::vector<float> data(world.rank() == 0 ? 7 : 8, 1.0f);
    CAPTURE(c.method);
    allreduce->start(std::span<float>(data));
    CHECK_THROWS_WITH_AS(allreduce->wait(), doctest::Contains("rank 0: 7 x float"), MismatchError);
    CHECK_FALSE(allreduce->in_flight());
    std::vector<float> ok(10, 1.0f);
    allreduce->start(std::span<float>(ok));
    CHECK_NOTHROW(allreduce->wait());
  }
}

// What the communication engine does with a queue of buckets (trainers/overlap/comm_engine.hpp): the next object's check
// runs while this one's data moves, and its data moves once released.
TEST_CASE("a held operation checks while another object moves data, sums once released, and reports a mismatch" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a count mismatch needs 2 ranks");
  for (const Case& c : all_methods(world.size())) {
    CAPTURE(c.method);
    AllreduceOptions options;
    options.own = c.own;
    auto first = make_allreduce(c.method, world, options), second = make_allreduce(c.method, world, options);
    std::vector<float> a(100000, 1.0f), b(1000, 2.0f);
    first->start(std::span<float>(a));
    second->start_held(std::span<float>(b));
    while (!first->test()) CHECK_FALSE(second->test());
    CHECK_FALSE(second->test());
    CHECK_THROWS_AS(second->wait(), std::logic_error);  // held
    second->release();
    second->wait();
    const ElementRange range = second->result_range(world.rank(), b.size());
    float workers = 0;
    for (int r = 0; r < world.size(); ++r) workers += second->contributes(r) ? 1.0f : 0.0f;
    CHECK(std::count(b.begin() + static_cast<long>(range.begin), b.begin() + static_cast<long>(range.end),
                     2.0f * workers) == static_cast<long>(range.size()));
    std::vector<float> bad(world.rank() == 0 ? 7 : 8, 1.0f);
    second->start_held(std::span<float>(bad));
    second->release();
    CHECK_THROWS_WITH_AS(second->wait(), doctest::Contains("rank 0: 7 x float"), MismatchError);
    CHECK_FALSE(second->in_flight());
    CHECK_THROWS_AS(second->release(), std::logic_error);  // nothing held
  }
}

TEST_CASE("one operation in flight per object: a second start() or a run() meanwhile is refused" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  auto allreduce = make_allreduce("ring", world, {});
  std::vector<float> data(1000, 1.0f);
  allreduce->start(std::span<float>(data));
  if (allreduce->in_flight()) {
    CHECK_THROWS_AS(allreduce->start(std::span<float>(data)), std::logic_error);
    CHECK_THROWS_AS(allreduce->run(std::span<float>(data)), std::logic_error);
  }
  allreduce->wait();
  CHECK(data[0] == static_cast<float>(world.size()));
}

namespace {

// Random floats over several orders of magnitude, so that the order of additions changes the bits of the sum.
std::vector<float> mixed_floats(std::size_t count, std::uint64_t seed, int rank) {
  std::vector<float> v(count);
  Rng rng(seed, static_cast<std::uint64_t>(rank));
  for (float& x : v) x = (2 * rng.uniform() - 1) * std::ldexp(1.0f, static_cast<int>(rng.uniform() * 20) - 10);
  return v;
}

// The communicators a test visits: the world, and each part of a split into the first three ranks and the rest, so
// a 4-rank job also covers P = 3 (a fold) and P = 1.
std::vector<Comm> world_and_parts() {
  const Comm world = Comm::world();
  std::vector<Comm> comms = {world};
  if (world.size() > 3) comms.push_back(world.split(world.rank() < 3 ? 0 : 1, world.rank()));
  return comms;
}

}  // namespace

TEST_CASE("every method whose ranks all get the sum leaves the same bits on every rank, for rounding floats" *
          doctest::test_suite("sweep")) {
  for (const Comm& comm : world_and_parts()) {
    for (const AllreduceMethod& m : allreduce_method_table()) {
      if (!m.every_rank_gets_sum()) continue;
      for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1001}, std::size_t{100003}}) {
        auto allreduce = make_allreduce(m.name, comm);
        std::vector<float> data = mixed_floats(count, 17, comm.rank());
        allreduce->run(std::span<float>(data));
        std::vector<float> first = data;
        check_mpi(MPI_Bcast(first.data(), static_cast<int>(count), MPI_FLOAT, 0, comm.native()), "MPI_Bcast",
                  comm.rank());
        CAPTURE(comm.size());
        CAPTURE(m.name);
        CAPTURE(count);
        CHECK(std::memcmp(first.data(), data.data(), count * sizeof(float)) == 0);
      }
    }
  }
}

// rd and rhd promise one tree of additions (exchange_allreduce.hpp): the pairs (2i, 2i+1) folded first, then core
// values combined lower + higher at distances 1, 2, 4, ... Computed here from every rank's input, serially.
TEST_CASE("rd and rhd add in one fixed tree: the same bits as each other and as the serial tree, on any P" *
          doctest::test_suite("sweep")) {
  for (const Comm& comm : world_and_parts()) {
    const int p = comm.size();
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{4099}}) {
      const std::vector<float> mine = mixed_floats(count, 23, comm.rank());
      std::vector<float> all(count * static_cast<std::size_t>(p));
      check_mpi(MPI_Allgather(mine.data(), static_cast<int>(count), MPI_FLOAT, all.data(), static_cast<int>(count),
                              MPI_FLOAT, comm.native()),
                "MPI_Allgather", comm.rank());
      const auto input = [&](int r, std::size_t i) { return all[static_cast<std::size_t>(r) * count + i]; };
      int core = 1;
      while (core * 2 <= p) core *= 2;
      const int extra = p - core;
      std::vector<float> expected(count);
      for (std::size_t i = 0; i < count; ++i) {
        std::vector<float> v(static_cast<std::size_t>(core));
        for (int c = 0; c < core; ++c) v[c] = c < extra ? input(2 * c, i) + input(2 * c + 1, i) : input(c + extra, i);
        for (int d = 1; d < core; d *= 2)
          for (int c = 0; c < core; c += 2 * d) v[c] = v[c] + v[c + d];
        expected[i] = v[0];
      }
      for (const char* method : {"rd", "rhd"}) {
        for (Drive drive : kDrives) {
          std::vector<float> data = mine;
          auto allreduce = make_allreduce(method, comm);
          reduce_with(*allreduce, std::span<float>(data), drive);
          CAPTURE(p);
          CAPTURE(method);
          CAPTURE(count);
          CAPTURE(static_cast<int>(drive));
          CHECK(std::memcmp(expected.data(), data.data(), count * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("the method table: unique names, each built under its own name, properties that hold" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  std::vector<std::string> seen;
  for (const AllreduceMethod& m : allreduce_method_table()) {
    CAPTURE(m.name);
    CHECK(std::find(seen.begin(), seen.end(), m.name) == seen.end());
    seen.emplace_back(m.name);
    CHECK(find_allreduce_method(m.name) == &m);
    CHECK_FALSE(m.summary.empty());
    // What callers that choose a layout by property set (allreduce_method.hpp) is declared by every such entry.
    CHECK(m.takes(kServerContributesOption) == (m.servers != ServerRanks::none));
    CHECK(m.takes(kServersOption) == (m.servers == ServerRanks::some));
    CHECK(m.takes(kRanksPerHostOption) == m.two_level);
    for (const MethodOption& o : m.options) CHECK((o.min <= o.fallback && o.fallback <= o.max));
    AllreduceOptions options;
    if (m.servers == ServerRanks::some) options.own.set(kServersOption, std::max(1, world.size() - 1));
    auto allreduce = make_allreduce(m.name, world, options);
    CHECK(allreduce->name() == m.name);
    CHECK(allreduce->contributes(0) == (m.servers == ServerRanks::none || world.size() == 1));
    CHECK((allreduce->options().chunk_bytes != kAutoChunkBytes) == m.chunked);
    CHECK((allreduce->options().segment_bytes != kAutoSegmentBytes) == m.segmented);
    CHECK((allreduce->options().ring_window != kAutoRingWindow) == m.chunked);
    std::vector<double> d(4, 1.0);
    if (m.float32_only)
      CHECK_THROWS_AS(allreduce->run(std::span<double>(d)), std::invalid_argument);
    else
      CHECK_NOTHROW(allreduce->run(std::span<double>(d)));
  }
  CHECK(seen == allreduce_methods());
  const std::string listing = allreduce_method_listing();
  CHECK(static_cast<std::size_t>(std::count(listing.begin(), listing.end(), '\n')) == seen.size());
  CHECK(listing.find("rd\texact any-type servers=none segmented modelled\t") != std::string::npos);
  CHECK(listing.find("\tservers=1 (1..2147483647): server ranks") != std::string::npos);
  CHECK(listing.find("ring-bf16\trounded float32 servers=none chunked segmented\t") != std::string::npos);
  CHECK(listing.find("hier\texact any-type servers=none chunked segmented two-level modelled\t") != std::string::npos);
  CHECK(find_allreduce_method("tree") == nullptr);
}

TEST_CASE("hier refuses hosts with different numbers of ranks, on every rank, naming the counts" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "hosts of unequal rank counts (P-1 and 1) need 3 ranks");
  AllreduceOptions uneven;
  uneven.own.set(kRanksPerHostOption, world.size() - 1);  // one host of P-1 ranks and one of 1
  CHECK_THROWS_WITH_AS(make_allreduce("hier", world, uneven), doctest::Contains("hosts have 1 to"),
                       std::invalid_argument);
}

TEST_CASE("Comm::reserve_tags: one counter per MPI communicator, the same tags on every rank, wrapping at the top" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world(), again = Comm::world();
  const int first = world.reserve_tags(2);
  CHECK(first >= kFirstReservedTag);
  CHECK(again.reserve_tags(3) == first + 2);  // another Comm on MPI_COMM_WORLD draws from the same counter
  CHECK(world.reserve_tags(1) == first + 5);
  const auto [lowest, highest] = world.min_max(static_cast<std::uint64_t>(first));
  CHECK(lowest == highest);
  const Comm sub = world.split(world.rank() % 2, world.rank());  // a new communicator starts its own counter
  CHECK(sub.reserve_tags(4) == kFirstReservedTag);
  CHECK(sub.reserve_tags(1) == kFirstReservedTag + 4);
  // The rule near MPI_TAG_UB: a block that fits ends exactly at the bound; one that would pass it starts again.
  CHECK(first_reserved_tag(1999, 2, 2000) == 1999);
  CHECK(first_reserved_tag(2000, 2, 2000) == kFirstReservedTag);
  CHECK(first_reserved_tag(std::int64_t{INT32_MAX} + 1, 1, INT32_MAX) == kFirstReservedTag);
  CHECK_THROWS_AS(first_reserved_tag(kFirstReservedTag, 0, 100000), std::invalid_argument);
  CHECK_THROWS_AS(first_reserved_tag(kFirstReservedTag, 100000, 100000), std::invalid_argument);
  CHECK(first_reserved_tag(kFirstReservedTag, 100000 - kFirstReservedTag + 1, 100000) == kFirstReservedTag);
}
