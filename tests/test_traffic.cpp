// The communication pattern of every method, read off the traffic layer (tests/traffic): whom each rank talks to,
// how many bytes, which collectives. Results alone cannot tell a ring from a disguised MPI_Allreduce.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "collectives/allreduce.hpp"
#include "tests/traffic/traffic.hpp"

using namespace gradsync;

namespace {

// World rank of `rank` in `comm`.
int world_of(const Comm& comm, int rank) {
  MPI_Group group, world;
  MPI_Comm_group(comm.native(), &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = -1;
  MPI_Group_translate_ranks(group, 1, &rank, world, &out);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

// The agreement check is the one collective a hand-written method may call: 8 int64 fields in one reduction.
constexpr std::size_t kAgreementBytes = 8 * sizeof(std::int64_t);

std::size_t agreement_checks(const traffic::Recording& rec) {
  std::size_t n = 0;
  for (const traffic::Collective& c : rec.collectives) n += c.bytes == kAgreementBytes;
  return n;
}

// Records one call of `method` on `count` floats.
struct Observed {
  std::unique_ptr<Allreduce> allreduce;
  traffic::Recording rec;
};

void record_run(Observed& o, std::size_t count) {
  std::vector<float> data(count, 1.0f);
  o.allreduce->run(std::span<float>(data));
}

std::vector<Comm> communicators() {
  const Comm world = Comm::world();
  std::vector<Comm> comms = {world};
  if (world.size() >= 4) comms.push_back(world.split(world.rank() < 3 ? 0 : 1, world.rank()));  // 3 ranks and 1
  return comms;
}

}  // namespace

TEST_CASE("the ring talks only to its two neighbours and sends 2(P-1) segments, nothing else") {
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}}) {
      for (std::size_t chunk_bytes : {std::size_t{64}, kSharedMemoryChunkBytes}) {
        for (bool check : {true, false}) {
          AllreduceOptions options;
          options.chunk_bytes = chunk_bytes;
          options.check_agreement = check;
          Observed o{make_allreduce("ring", comm, options), {}};
          record_run(o, count);
          CAPTURE(p);
          CAPTURE(count);
          CAPTURE(chunk_bytes);
          CAPTURE(check);
          // Whole segments: reduce-scatter sends segments r, r-1, ..., all-gather r+1, r, ... (P-1 each).
          std::size_t expected = 0;
          for (int step = 0; step < p - 1; ++step) {
            expected += partition(count, p, static_cast<std::size_t>((r - step + 2 * p) % p)).size();
            expected += partition(count, p, static_cast<std::size_t>((r + 1 - step + 2 * p) % p)).size();
          }
          CHECK(o.rec.bytes_sent() == expected * sizeof(float));
          // Within one element per segment of 2(P-1)/P of the buffer.
          const double ideal = 2.0 * (p - 1) * static_cast<double>(count) / p;
          CHECK(std::abs(static_cast<double>(expected) - ideal) <= 2.0 * (p - 1));
          if (p > 1) {
            CHECK(o.rec.send_peers() == std::vector<int>{world_of(comm, (r + 1) % p)});
            CHECK(o.rec.receive_peers() == std::vector<int>{world_of(comm, (r - 1 + p) % p)});
          } else {
            CHECK(o.rec.sends.empty());
            CHECK(o.rec.receives.empty());
          }
          // No collective moves data: at most the agreement check, and none without it.
          CHECK(o.rec.collectives.size() == (check && p > 1 ? 1u : 0u));
          CHECK(agreement_checks(o.rec) == o.rec.collectives.size());
        }
      }
    }
  }
}

TEST_CASE("parameter-server workers push and pull each server's key range only; servers receive every worker's") {
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    if (p < 2) continue;
    for (int servers = 1; servers < p; ++servers) {
      for (bool contributes : {false, true}) {
        const std::size_t count = 10007;
        AllreduceOptions options;
        options.servers = servers;
        options.server_contributes = contributes;
        Observed o{make_allreduce("ps-sharded", comm, options), {}};
        record_run(o, count);
        CAPTURE(p);
        CAPTURE(servers);
        CAPTURE(contributes);
        const bool server = r < servers, pushes = !server || contributes;
        for (int peer = 0; peer < p; ++peer) {
          CAPTURE(peer);
          const int w = world_of(comm, peer);
          const bool peer_server = peer < servers, peer_pushes = !peer_server || contributes;
          std::size_t to = 0, from = 0;
          if (peer != r) {
            // A contributor pushes server `peer`'s range to it and pulls it back.
            if (pushes && peer_server) to += partition(count, servers, peer).size(), from += to;
            // A server receives its own range from every contributor and sends the sum back.
            if (server && peer_pushes) {
              const std::size_t mine = partition(count, servers, r).size();
              to += mine;
              from += mine;
            }
          }
          CHECK(o.rec.bytes_sent_to(w) == to * sizeof(float));
          CHECK(o.rec.bytes_received_from(w) == from * sizeof(float));
        }
        CHECK(o.rec.collectives.size() == 1);
        CHECK(agreement_checks(o.rec) == 1);
      }
    }
  }
}

TEST_CASE("mpi calls MPI_Allreduce once on the whole buffer and sends nothing itself") {
  for (const Comm& comm : communicators()) {
    if (comm.size() < 2) continue;
    const std::size_t count = 4099;
    Observed o{make_allreduce("mpi", comm), {}};
    record_run(o, count);
    CHECK(o.rec.sends.empty());
    CHECK(o.rec.receives.empty());
    CHECK(agreement_checks(o.rec) == 1);
    std::size_t whole = 0;
    for (const traffic::Collective& c : o.rec.collectives) whole += c.bytes == count * sizeof(float);
    CHECK(whole == 1);
    CHECK(o.rec.collectives.size() == 2);
  }
}
