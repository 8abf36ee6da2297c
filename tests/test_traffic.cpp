// The communication pattern of every method, read off the traffic layer (tests/traffic): whom each rank talks to,
// how many bytes, which collectives. Results alone cannot tell a ring from a disguised MPI_Allreduce.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string_view>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/methods.hpp"
#include "collectives/wire_meter.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"

using namespace gradsync;

namespace {

// The agreement check is the one collective a hand-written method may call: 8 int64 fields in one reduction.
constexpr std::size_t kAgreementBytes = 8 * sizeof(std::int64_t);

std::size_t agreement_checks(const traffic::Recording& rec) {
  std::size_t n = 0;
  for (const traffic::Collective& c : rec.collectives) n += c.bytes == kAgreementBytes;
  return n;
}

// No collective moves data: the agreement check where `checked`, no collective at all otherwise.
void check_only_agreement(const traffic::Recording& rec, bool checked) {
  CHECK(rec.collectives.size() == (checked ? 1u : 0u));
  CHECK(agreement_checks(rec) == rec.collectives.size());
}

// One call of `method` on `count` floats, recorded: the method is built on `comm` (a collective call of every rank
// of it) before the recording starts, so `rec` holds the call alone.
struct Observed {
  Observed(std::string_view method, const Comm& comm, const AllreduceOptions& options, std::size_t count)
      : allreduce(make_allreduce(method, comm, options)) {
    std::vector<float> data(count, 1.0f);
    allreduce->run(std::span<float>(data));
  }
  std::unique_ptr<Allreduce> allreduce;
  traffic::Recording rec;
};

std::vector<Comm> communicators() {
  const Comm world = Comm::world();
  std::vector<Comm> comms = {world};
  if (world.size() >= 4) comms.push_back(world.split(world.rank() < 3 ? 0 : 1, world.rank()));  // 3 ranks and 1
  return comms;
}

}  // namespace

TEST_CASE("the ring talks only to its two neighbours and sends 2(P-1) segments, nothing else" *
          doctest::test_suite("sweep")) {
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}}) {
      for (std::size_t chunk_bytes : {std::size_t{64}, kSharedMemoryChunkBytes}) {
        for (bool check : {true, false}) {
          AllreduceOptions options;
          options.chunk_bytes = chunk_bytes;
          options.check_agreement = check;
          const Observed o("ring", comm, options, count);
          CAPTURE(p);
          CAPTURE(count);
          CAPTURE(chunk_bytes);
          CAPTURE(check);
          const std::size_t expected = traffic::ring_elements_sent(count, p, r);
          CHECK(o.rec.bytes_sent() == expected * sizeof(float));
          // Within one element per segment of 2(P-1)/P of the buffer.
          const double ideal = 2.0 * (p - 1) * static_cast<double>(count) / p;
          CHECK(std::abs(static_cast<double>(expected) - ideal) <= 2.0 * (p - 1));
          if (p > 1) {
            CHECK(o.rec.send_peers() == std::vector<int>{traffic::world_rank_of(comm, (r + 1) % p)});
            CHECK(o.rec.receive_peers() == std::vector<int>{traffic::world_rank_of(comm, (r - 1 + p) % p)});
          } else {
            CHECK(o.rec.sends.empty());
            CHECK(o.rec.receives.empty());
          }
          check_only_agreement(o.rec, check && p > 1);
        }
      }
    }
  }
}

TEST_CASE("parameter-server workers push and pull each server's key range only; servers receive every worker's" *
          doctest::test_suite("sweep")) {
  SKIP_UNLESS(Comm::world().size() >= 2, "a server and a worker need 2 ranks");
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    if (p < 2) continue;  // the single rank split off beside 3
    for (int servers = 1; servers < p; ++servers) {
      for (bool contributes : {false, true}) {
        const std::size_t count = 10007;
        AllreduceOptions options;
        options.own.set(kServersOption, servers).set(kServerContributesOption, contributes ? 1 : 0);
        const Observed o("ps-sharded", comm, options, count);
        CAPTURE(p);
        CAPTURE(servers);
        CAPTURE(contributes);
        const bool server = r < servers, pushes = !server || contributes;
        for (int peer = 0; peer < p; ++peer) {
          CAPTURE(peer);
          const int w = traffic::world_rank_of(comm, peer);
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
        check_only_agreement(o.rec, true);
      }
    }
  }
}

TEST_CASE("mpi calls MPI_Allreduce once on the whole buffer and sends nothing itself" * doctest::test_suite("sweep")) {
  SKIP_UNLESS(Comm::world().size() >= 2, "an MPI_Allreduce with a peer to sum with needs 2 ranks");
  for (const Comm& comm : communicators()) {
    if (comm.size() < 2) continue;  // the single rank split off beside 3
    const std::size_t count = 4099;
    const Observed o("mpi", comm, {}, count);
    CHECK(o.rec.sends.empty());
    CHECK(o.rec.receives.empty());
    CHECK(agreement_checks(o.rec) == 1);
    std::size_t whole = 0;
    for (const traffic::Collective& c : o.rec.collectives) whole += c.bytes == count * sizeof(float);
    CHECK(whole == 1);
    CHECK(o.rec.collectives.size() == 2);
  }
}

namespace {

// The fold of exchange_allreduce.hpp, restated: P' the largest power of two <= P, E = P - P'; ranks below 2E pair
// up (2i, 2i+1) and the odd one takes core rank i; ranks from 2E take core rank r - E.
struct FoldPlace {
  int core = 1, extra = 0, core_rank = -1, partner = -1;
};
FoldPlace fold_place(int r, int p) {
  FoldPlace f;
  while (f.core * 2 <= p) f.core *= 2;
  f.extra = p - f.core;
  if (r < 2 * f.extra) {
    f.partner = r ^ 1;
    f.core_rank = r % 2 ? r / 2 : -1;
  } else {
    f.core_rank = r - f.extra;
  }
  return f;
}
int rank_of_core(const FoldPlace& f, int c) { return c < f.extra ? 2 * c + 1 : c + f.extra; }

// The ranks a core rank swaps with, in step order: core ranks c ^ 1, c ^ 2, ... below P'.
std::vector<int> core_partners(const FoldPlace& f) {
  std::vector<int> out;
  for (int mask = 1; mask < f.core; mask <<= 1) out.push_back(rank_of_core(f, f.core_rank ^ mask));
  return out;
}

struct Sent {
  int peer;
  std::size_t elements;
};
std::vector<Sent> sent(const traffic::Recording& rec) {
  std::vector<Sent> out;
  for (const traffic::Message& m : rec.sends) out.push_back({m.peer, m.bytes / sizeof(float)});
  return out;
}

}  // namespace

TEST_CASE("rd swaps the whole buffer with core rank c ^ 2^k in step k, with one fold message each way beyond P'" *
          doctest::test_suite("sweep")) {
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    const FoldPlace f = fold_place(r, p);
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
      for (bool check : {true, false}) {
        AllreduceOptions options;
        options.check_agreement = check;
        const Observed o("rd", comm, options, count);
        CAPTURE(p);
        CAPTURE(r);
        CAPTURE(count);
        // The messages this rank must send, in order, and must receive from the same peers.
        std::vector<int> peers;
        if (p > 1) {
          if (f.core_rank < 0) {
            peers.push_back(f.partner);  // hand over, then only receive the result
          } else {
            peers = core_partners(f);
            if (f.partner >= 0) peers.push_back(f.partner);  // the result back to the even partner
          }
        }
        // CHECK, not REQUIRE, wherever a rank could fail alone: a rank leaving the test case early would leave the
        // others waiting in the next collective.
        const std::vector<Sent> s = sent(o.rec);
        CHECK(s.size() == peers.size());
        for (std::size_t k = 0; k < std::min(s.size(), peers.size()); ++k) {
          CAPTURE(k);
          CHECK(s[k].peer == traffic::world_rank_of(comm, peers[k]));
          CHECK(s[k].elements == count);
        }
        // Receives: the same core partners; the fold partner's buffer first (odd rank) or last (even rank).
        std::vector<int> from;
        if (p > 1) {
          if (f.partner >= 0) from.push_back(f.partner);
          if (f.core_rank >= 0)
            for (int partner : core_partners(f)) from.push_back(partner);
        }
        CHECK(o.rec.receives.size() == from.size());
        for (std::size_t k = 0; k < std::min(from.size(), o.rec.receives.size()); ++k)
          CHECK(o.rec.receives[k].peer == traffic::world_rank_of(comm, from[k]));
        check_only_agreement(o.rec, check && p > 1);
      }
    }
  }
}

TEST_CASE("rhd sends halving windows to c ^ 2^k, then doubling ones back in reverse: 2(P'-1)/P' of the buffer" *
          doctest::test_suite("sweep")) {
  for (const Comm& comm : communicators()) {
    const int p = comm.size(), r = comm.rank();
    const FoldPlace f = fold_place(r, p);
    int steps = 0;
    while ((1 << steps) < f.core) ++steps;
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{100003}}) {
      const Observed o("rhd", comm, {}, count);
      CAPTURE(p);
      CAPTURE(r);
      CAPTURE(count);
      const std::vector<Sent> s = sent(o.rec);
      check_only_agreement(o.rec, p > 1);
      if (p == 1) {
        CHECK(s.empty());
        continue;
      }
      if (f.core_rank < 0) {  // a folded-out rank: the whole buffer to its partner, the whole result back
        CHECK(s.size() == 1);
        CHECK(o.rec.receives.size() == 1);
        if (s.size() != 1 || o.rec.receives.size() != 1) continue;
        CHECK(s[0].peer == traffic::world_rank_of(comm, f.partner));
        CHECK(s[0].elements == count);
        CHECK(o.rec.receives[0].peer == traffic::world_rank_of(comm, f.partner));
        continue;
      }
      const std::size_t fold_out = f.partner >= 0 ? 1 : 0;
      const std::size_t messages = 2 * static_cast<std::size_t>(steps) + fold_out;
      CHECK(s.size() == messages);
      CHECK(o.rec.receives.size() == messages);
      if (s.size() != messages || o.rec.receives.size() != messages) continue;
      std::size_t scattered = 0, gathered = 0;
      for (int k = 0; k < steps; ++k) {
        CAPTURE(k);
        // Reduce-scatter step k: half of a window of P'/2^k pieces to c ^ 2^k.
        CHECK(s[k].peer == traffic::world_rank_of(comm, rank_of_core(f, f.core_rank ^ (1 << k))));
        const double half = static_cast<double>(count) / (2 << k);
        CHECK(std::abs(static_cast<double>(s[k].elements) - half) <= f.core / (2 << k));
        scattered += s[k].elements;
        // All-gather step k: the window of 2^k pieces to c ^ (P'/2 >> k), partners in reverse order.
        const std::size_t g = static_cast<std::size_t>(steps + k);
        CHECK(s[g].peer == traffic::world_rank_of(comm, rank_of_core(f, f.core_rank ^ (f.core / 2 >> k))));
        const double window = static_cast<double>(count) * (1 << k) / f.core;
        CHECK(std::abs(static_cast<double>(s[g].elements) - window) <= (1 << k));
        gathered += s[g].elements;
      }
      // What the reduce-scatter gives away plus the piece this rank finished is the buffer; the all-gather sends
      // every piece this rank has by then, which sums to the buffer less the last half it receives.
      const std::size_t own = s[static_cast<std::size_t>(steps)].elements;
      CHECK(scattered + own == count);
      std::size_t received_in_gather = 0;
      for (int k = 0; k < steps; ++k)
        received_in_gather +=
            o.rec.receives[static_cast<std::size_t>(steps + k) + (f.partner >= 0 ? 1 : 0)].bytes / sizeof(float);
      CHECK(received_in_gather + own == count);
      const double ideal = 2.0 * (f.core - 1) * static_cast<double>(count) / f.core;
      CHECK(std::abs(static_cast<double>(scattered + gathered) - ideal) <= 2.0 * steps * f.core);
      if (fold_out) {
        CHECK(s.back().peer == traffic::world_rank_of(comm, f.partner));
        CHECK(s.back().elements == count);
      }
    }
  }
}

TEST_CASE("hier crosses hosts only with its slice: a ring inside each host, one across hosts per local rank" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  const int p = world.size(), r = world.rank(), per_host = 2;
  SKIP_UNLESS(p >= 4 && p % per_host == 0, "two hosts of 2 ranks each need an even rank count of at least 4");
  const int hosts = p / per_host, host = r / per_host, l = r % per_host;
  const std::size_t count = 10007;
  AllreduceOptions options;
  options.own.set(kRanksPerHostOption, per_host);
  options.chunk_bytes = 4096;
  const Observed o("hier", world, options, count);
  // Inside the host: the ring's reduce-scatter and all-gather on L ranks, each 1/L of the buffer per step.
  const std::size_t slice = partition(count, per_host, static_cast<std::size_t>((l + 1) % per_host)).size();
  const std::size_t inside = traffic::ring_elements_sent(count, per_host, l);
  // Across hosts: a ring over this rank's slice with the same local rank on every host.
  const std::size_t across = traffic::ring_elements_sent(slice, hosts, host);
  const int local_right = host * per_host + (l + 1) % per_host;
  const int cross_right = ((host + 1) % hosts) * per_host + l;
  CHECK(o.rec.bytes_sent_to(local_right) == inside * sizeof(float));
  CHECK(o.rec.bytes_sent_to(cross_right) == across * sizeof(float));
  CHECK(o.rec.bytes_sent() == (inside + across) * sizeof(float));
  // Only 2(H-1)/H of the slice, about 1/L of what a flat ring would send, leaves the host.
  CHECK(static_cast<double>(across) <= 2.0 * (hosts - 1) / hosts * static_cast<double>(slice) + 2.0 * hosts);
  check_only_agreement(o.rec, true);
}

namespace {

// The messages a recording's sends would become when each is cut into pieces of at most `segment` bytes.
std::size_t pieces_of(const std::vector<traffic::Message>& messages, std::size_t segment) {
  std::size_t n = 0;
  for (const traffic::Message& m : messages) n += std::max<std::size_t>(1, (m.bytes + segment - 1) / segment);
  return n;
}

// What one run of `method` sent and received (a Recording cannot be kept beside another one).
struct RunTraffic {
  std::vector<traffic::Message> sends, receives;
  std::size_t bytes_sent = 0;
  std::vector<int> send_peers, receive_peers;
};

RunTraffic seen(const char* method, const Comm& comm, const AllreduceOptions& options, std::size_t count) {
  const Observed o(method, comm, options, count);
  return {o.rec.sends, o.rec.receives, o.rec.bytes_sent(), o.rec.send_peers(), o.rec.receive_peers()};
}

std::size_t largest(const std::vector<traffic::Message>& messages) {
  std::size_t most = 0;
  for (const traffic::Message& m : messages) most = std::max(most, m.bytes);
  return most;
}

}  // namespace

TEST_CASE("pairwise exchanges go as pieces of at most segment_bytes, the same bytes; a ring of three or more does not" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  std::vector<Comm> comms = communicators();
  if (world.size() >= 2) comms.push_back(world.split(world.rank() / 2, world.rank()));  // pairs (and a single)
  constexpr std::size_t kSegment = 64;
  for (const Comm& comm : comms) {
    for (const char* method : {"rd", "rhd", "ring"}) {
      for (std::size_t count : {std::size_t{1}, std::size_t{15}, std::size_t{1000}, std::size_t{4099}}) {
        AllreduceOptions whole_options, cut_options;
        whole_options.chunk_bytes = cut_options.chunk_bytes = 1024;
        whole_options.segment_bytes = kWholeMessages;
        cut_options.segment_bytes = kSegment;
        const RunTraffic whole = seen(method, comm, whole_options, count), cut = seen(method, comm, cut_options, count);
        CAPTURE(comm.size());
        CAPTURE(method);
        CAPTURE(count);
        CHECK(cut.bytes_sent == whole.bytes_sent);
        CHECK(cut.send_peers == whole.send_peers);
        CHECK(cut.receive_peers == whole.receive_peers);
        const bool pairwise = std::string_view(method) != "ring" || comm.size() == 2;
        if (pairwise) {
          CHECK(largest(cut.sends) <= kSegment);
          CHECK(largest(cut.receives) <= kSegment);
          CHECK(cut.sends.size() == pieces_of(whole.sends, kSegment));
          CHECK(cut.receives.size() == pieces_of(whole.receives, kSegment));
        } else {
          CHECK(cut.sends.size() == whole.sends.size());
          CHECK(largest(cut.sends) == largest(whole.sends));
        }
      }
    }
  }
}

TEST_CASE("the wire meter counts every byte a method's own messages send, and nothing of the library's collective") {
  for (const Comm& comm : communicators()) {
    for (const AllreduceMethod& method : allreduce_method_table()) {
      if (!method.every_rank_gets_sum() && comm.size() < 2) continue;  // a server needs a worker
      const std::unique_ptr<Allreduce> allreduce = make_allreduce(method.name, comm, {});
      std::vector<float> data(4099, 1.0f);
      const std::uint64_t before = bytes_sent_so_far();
      traffic::Recording rec;
      allreduce->run(std::span<float>(data));
      const std::uint64_t counted = bytes_sent_so_far() - before;
      CAPTURE(comm.size());
      CAPTURE(method.name);
      CHECK(counted == rec.bytes_sent());
      if (method.library || comm.size() == 1)
        CHECK(counted == 0);
      else if (method.every_rank_gets_sum())
        CHECK(counted > 0);
    }
  }
}
