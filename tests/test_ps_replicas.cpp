// The parameter server's live replicas (--replicas R, bsp): each round a server sends its key range's sum to the
// next R-1 servers and nothing else to them, and every server holds each range it replicates exactly as its
// primary does, now and one round back (what an in-place recovery rebuilds the model from).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/families/ps/ps_training.hpp"

using namespace gradsync;

namespace {

// Whether server `holder` of `servers` keeps range `range` with `replicas` per range (its own, and the R-1 before).
bool holds(int holder, int range, int servers, int replicas) { return (holder - range + servers) % servers < replicas; }

}  // namespace

TEST_CASE("bsp replicas: each round a server sends its range's sum to the next R-1 servers, and holds theirs as they do" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "two servers and a worker need 3 ranks");
  constexpr long kSteps = 5;
  constexpr std::size_t kCount = 1001;
  for (int servers = 2; servers < world.size(); ++servers) {
    for (int replicas = 1; replicas <= servers; ++replicas) {
      CAPTURE(servers);
      CAPTURE(replicas);
      const int workers = world.size() - servers;
      const bool is_server = world.rank() < servers;
      const Comm run = world.split(0, world.rank());
      const Comm server_comm = run.split(is_server ? 0 : MPI_UNDEFINED, run.rank());
      const PsLayout layout{servers, workers, kCount};
      TrainConfig config;
      config.sync = sync_method("ps");
      config.servers = servers;
      set_ps_options(config, {.mode = PsMode::bsp, .replicas = replicas});
      config.sgd = {1.0f, 0.0f, 0.0f};  // lr 1: every round moves every parameter by the mean gradient, 1
      std::vector<float> start(kCount);
      for (std::size_t i = 0; i < kCount; ++i) start[i] = static_cast<float>(i % 7);
      // A server's view of what it holds, checked below against what the first worker pulled.
      std::vector<float> held_now, held_before;
      std::vector<float> now = start, before = start;  // on the workers: the model after the last step, the one before
      if (is_server) {
        ParameterServer server(run, server_comm, layout, config, start);
        traffic::Recording rec;
        server.serve(kSteps);
        const ServerLiveState live = server.live_state();
        CHECK(live.steps == kSteps);
        CHECK(live.has_previous);
        held_now.assign(live.params.begin(), live.params.end());
        held_before.assign(live.previous_params.begin(), live.previous_params.end());
        const int me = world.rank();
        for (int s = 0; s < servers; ++s) {
          CAPTURE(s);
          // Synchronous sends of this server's range to its replicas, one per round; none to the others.
          const std::size_t mine = partition(kCount, servers, me).size();
          const bool replica = s != me && holds(s, me, servers, replicas);
          CHECK(rec.bytes_sent_to(traffic::world_rank_of(run, s)) == (replica ? kSteps * mine * sizeof(float) : 0));
        }
        const auto issends =
            std::ranges::count_if(rec.sends, [](const traffic::Message& m) { return m.call == "MPI_Issend"; });
        CHECK(issends == kSteps * (replicas - 1));
      } else {
        const std::unique_ptr<Synchronizer> sync = make_ps_worker(run, layout, config);
        std::vector<float> grads(kCount, 1.0f);
        for (long k = 0; k < kSteps; ++k) {
          before = now;
          sync->step(now, grads);
        }
      }
      // The first worker's pulls are the servers' model after each round: every held range must be it, now and one
      // round back, and every worker must have pulled the same.
      const std::vector<float> first_now = [&] {
        std::vector<float> v = now;
        run.broadcast(std::span<float>(v), servers);
        return v;
      }();
      std::vector<float> first_before = before;
      run.broadcast(std::span<float>(first_before), servers);
      CHECK(first_now != start);
      if (!is_server) {
        CHECK(now == first_now);
        continue;
      }
      for (int s = 0; s < servers; ++s) {
        if (!holds(world.rank(), s, servers, replicas)) continue;
        CAPTURE(s);
        const ElementRange r = partition(kCount, servers, s);
        std::size_t wrong = 0;
        for (std::size_t i = r.begin; i < r.end; ++i) {
          wrong += held_now[i] != first_now[i] ? 1 : 0;
          wrong += held_before[i] != first_before[i] ? 1 : 0;
        }
        CHECK(wrong == 0);
      }
    }
  }
}
