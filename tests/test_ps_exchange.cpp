// The parameter server is written once (collectives/key_range_exchange.hpp): the ps allreduce methods and the
// parameter-server trainer both talk through it. Read off the traffic layer (tests/traffic), a BSP step of the trainer
// moves exactly the messages of one ps-sharded reduction of the same count with the same servers: the same calls,
// to the same peers, of the same sizes, on every rank. A trainer that pushed, pulled or answered in a way of its own
// (another call, another range) would differ here even where its results stayed right.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/comm.hpp"
#include "collectives/methods.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/families/ps/ps_training.hpp"

using namespace gradsync;

namespace {

// A rank's messages as (call, world peer, bytes), sorted: tags differ between the two objects (each reserves its own).
using Messages = std::vector<std::tuple<std::string, int, std::size_t>>;

Messages messages(const std::vector<traffic::Message>& list) {
  Messages out;
  for (const traffic::Message& m : list) out.emplace_back(m.call, m.peer, m.bytes);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("a parameter-server trainer's BSP step moves the messages of one ps-sharded reduction: one exchange") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a server and a worker need 2 ranks");
  const std::size_t n = 10007;
  for (int servers = 1; servers < world.size(); ++servers) {
    CAPTURE(servers);
    Messages reduction_sent, reduction_received, step_sent, step_received;
    {
      AllreduceOptions options;
      options.own.set(kServersOption, servers);
      options.check_agreement = false;  // its one collective is not part of the exchange
      const std::unique_ptr<Allreduce> ps = make_allreduce("ps-sharded", world, options);
      std::vector<float> data(n, 1.0f);
      traffic::Recording rec;
      ps->run(std::span<float>(data));
      CHECK(rec.collectives.empty());
      reduction_sent = messages(rec.sends);
      reduction_received = messages(rec.receives);
    }
    world.barrier();
    const PsLayout layout{servers, world.size() - servers, n};
    TrainConfig config;
    config.sync = sync_method("ps");
    config.servers = servers;
    const Comm server_comm = world.split(world.rank() < servers ? 0 : MPI_UNDEFINED, world.rank());
    if (world.rank() < servers) {
      ParameterServer server(world, server_comm, layout, config, std::vector<float>(n, 0.0f));
      traffic::Recording rec;
      server.serve(1);
      CHECK(rec.collectives.empty());
      step_sent = messages(rec.sends);
      step_received = messages(rec.receives);
    } else {
      const std::unique_ptr<Synchronizer> sync = make_ps_worker(world, layout, config);
      std::vector<float> params(n, 0.0f), grads(n, 1.0f);
      traffic::Recording rec;
      sync->step(params, grads);
      CHECK(rec.collectives.empty());
      step_sent = messages(rec.sends);
      step_received = messages(rec.receives);
    }
    CHECK(!step_sent.empty());
    CHECK(step_sent == reduction_sent);
    CHECK(step_received == reduction_received);
    world.barrier();
  }
}
