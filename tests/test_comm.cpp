// Comm's typed calls: broadcasts, reductions and gathers of small values, and nonblocking point-to-point with
// checked completion. Every rank runs every case; values depend on the rank so that a wrong root or order shows.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/comm.hpp"

using namespace gradsync;

namespace {

// A text whose length and content depend on `rank` (empty on rank 1, so that empty texts take part).
std::string text_of(int rank) {
  if (rank == 1) return {};
  return std::string(static_cast<std::size_t>(rank) + 2, static_cast<char>('a' + rank));
}

}  // namespace

TEST_CASE("Comm::broadcast gives every rank the root's buffer, value and text") {
  const Comm world = Comm::world();
  for (int root = 0; root < world.size(); ++root) {
    CAPTURE(root);
    std::vector<double> v = {1.0 * world.rank(), 2.0 * world.rank(), -3.0};
    world.broadcast(v, root);
    CHECK(v == std::vector<double>{1.0 * root, 2.0 * root, -3.0});
    CHECK(world.broadcast(std::int64_t{100} + world.rank(), root) == 100 + root);
    std::string text = text_of(world.rank());
    world.broadcast_string(text, root);
    CHECK(text == text_of(root));
  }
}

TEST_CASE("Comm::max, min and sum reduce one value onto every rank; the in-place forms reduce elementwise") {
  const Comm world = Comm::world();
  const int p = world.size();
  CHECK(world.max(world.rank()) == p - 1);
  CHECK(world.min(10 - world.rank()) == 10 - (p - 1));
  CHECK(world.sum(std::int64_t{1} << 40) == (std::int64_t{1} << 40) * p);
  CHECK(world.max(-0.5 * world.rank()) == 0.0);
  std::array<std::int64_t, 3> m = {world.rank(), -world.rank(), 7};
  world.max_in_place(m);
  CHECK(m == std::array<std::int64_t, 3>{p - 1, 0, 7});
  std::vector<float> s = {1.0f, static_cast<float>(world.rank())};
  world.sum_in_place(s);
  CHECK(s == std::vector<float>{static_cast<float>(p), static_cast<float>(p * (p - 1) / 2)});
}

TEST_CASE("Comm::sum_to and max_to leave the result on the root and the other ranks' buffers as they were") {
  const Comm world = Comm::world();
  const int p = world.size();
  const int root = p - 1;
  std::array<double, 2> s = {1.0, 1.0 * world.rank()};
  world.sum_to(root, s);
  std::array<double, 2> m = {-1.0 * world.rank(), 1.0 * world.rank()};
  world.max_to(root, m);
  if (world.rank() == root) {
    CHECK(s == std::array<double, 2>{1.0 * p, p * (p - 1) / 2.0});
    CHECK(m == std::array<double, 2>{0.0, p - 1.0});
  } else {
    CHECK(s == std::array<double, 2>{1.0, 1.0 * world.rank()});
    CHECK(m == std::array<double, 2>{-1.0 * world.rank(), 1.0 * world.rank()});
  }
}

TEST_CASE("Comm::gather, all_gather and gather_strings put every rank's part in rank order") {
  const Comm world = Comm::world();
  const int p = world.size();
  const int root = p > 1 ? 1 : 0;
  std::vector<int> expected_values, expected_pairs;
  std::string expected_text;
  for (int r = 0; r < p; ++r) {
    expected_values.push_back(10 * r);
    expected_pairs.insert(expected_pairs.end(), {r, -r});
    expected_text += text_of(r);
  }
  const std::vector<int> values = world.gather(10 * world.rank(), root);
  const std::array<int, 2> pair = {world.rank(), -world.rank()};
  const std::vector<int> pairs = world.gather(pair, root);
  const std::string text = world.gather_strings(text_of(world.rank()), root);
  if (world.rank() == root) {
    CHECK(values == expected_values);
    CHECK(pairs == expected_pairs);
    CHECK(text == expected_text);
  } else {
    CHECK(values.empty());
    CHECK(pairs.empty());
    CHECK(text.empty());
  }
  CHECK(world.all_gather(pair) == expected_pairs);
}

TEST_CASE("Comm::isend and irecv move whole buffers; wait_all, test_all and wait_any complete their requests") {
  const Comm world = Comm::world();
  const int p = world.size();
  const int right = (world.rank() + 1) % p, left = (world.rank() + p - 1) % p;
  constexpr int kTag = 0x3c0;
  const std::vector<float> mine(5, static_cast<float>(world.rank()));
  std::vector<float> from_left(5, -1.0f);
  std::array<MPI_Request, 2> requests = {world.irecv(from_left, left, kTag), world.isend(mine, right, kTag)};
  while (!world.test_all(requests, "ring shift")) {
  }
  CHECK(requests[0] == MPI_REQUEST_NULL);
  CHECK(requests[1] == MPI_REQUEST_NULL);
  CHECK(from_left == std::vector<float>(5, static_cast<float>(left)));

  // The same shift, the other way, completed one request at a time as wait_any finds them.
  std::vector<float> from_right(5, -1.0f);
  requests = {world.isend(mine, left, kTag + 1), world.irecv(from_right, right, kTag + 1)};
  int completed = 0;
  for (;;) {
    const int i = world.wait_any(requests, "ring shift back");
    if (i == -1) break;
    CHECK(requests[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL);
    ++completed;
  }
  CHECK(completed == 2);
  CHECK(from_right == std::vector<float>(5, static_cast<float>(right)));

  requests = {world.irecv(from_left, left, kTag + 2), world.isend(mine, right, kTag + 2)};
  world.wait(requests[1], "ring shift send");
  world.wait_all(requests, "ring shift");  // the one already completed counts as complete
  CHECK(requests[0] == MPI_REQUEST_NULL);
}

TEST_CASE("Comm's typed calls name the call and the rank when MPI refuses them") {
  const Comm world = Comm::world();
  std::vector<float> buffer(1);
  const std::string isend = fmt::format("MPI_Isend (to rank {}, tag 0) failed on rank {}", world.size(), world.rank());
  CHECK_THROWS_WITH_AS(world.isend(buffer, world.size(), 0), doctest::Contains(isend.c_str()), MpiError);
  const std::string bcast = fmt::format("MPI_Bcast failed on rank {}", world.rank());
  CHECK_THROWS_WITH_AS(world.broadcast(buffer, -5), doctest::Contains(bcast.c_str()), MpiError);
}
