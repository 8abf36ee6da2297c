// Parameter-server consistency, observed from the outside. The server and its workers are driven directly, with
// gradients chosen so that the parameters a worker pulls spell out the server's state: with lr 1 and plain SGD,
// worker w pushes -W at "its" coordinate of every key range, so that coordinate counts the gradients of w the
// server had applied when it answered. A worker then reads every clock at the moment it was released, without
// trusting the server's own bookkeeping. World rank 0..servers-1 serve, the rest work; the last rank is a
// deterministic straggler.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "collectives/comm.hpp"
#include "test_support.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/families/ps/ps_training.hpp"

using namespace gradsync;

namespace {

struct PsRun {
  PsMode mode = PsMode::bsp;
  int staleness = 0;
  int servers = 1;
  long steps = 6;
  // The straggler sleeps this long before every push and the others not at all: long against a round trip even
  // on an oversubscribed host, so that fast workers always get as far ahead as the mode lets them.
  double slow_ms = 40;
};

struct Observed {
  long max_gap = 0;  // over every worker and step: own clock - slowest clock when released
  long min_gap = 0;
  bool lockstep = true;            // every clock equal to the pulling worker's after every step
  bool own_clock_ok = true;        // a worker's k-th reply always includes its own k gradients
  EpochWork server;                // server 0's own statistics
  std::vector<float> final_model;  // server 0: the master copy after the run
};

// Worker w's clock lives at key_range(s).begin + w of every server s.
std::size_t clock_slot(const PsLayout& layout, int server, int worker) {
  return layout.key_range(server).begin + static_cast<std::size_t>(worker);
}

// Collective over `world` (size > servers). Every rank gets the maxima/minima over all workers.
Observed run_ps(const Comm& world, const PsRun& run) {
  const int servers = run.servers, workers = world.size() - servers;
  const bool is_server = world.rank() < servers;
  const PsLayout layout{servers, workers, static_cast<std::size_t>(servers * workers)};
  TrainConfig config;
  config.sync = sync_method("ps");
  set_ps_options(config, {.mode = run.mode, .staleness = run.staleness});
  config.servers = servers;
  config.sgd = {1.0f, 0.0f, 0.0f};
  const Comm server_comm = world.split(is_server ? 0 : MPI_UNDEFINED, world.rank());
  Observed seen;
  long max_gap = 0, min_gap = 0;
  int lockstep = 1, own_ok = 1;
  if (is_server) {
    ParameterServer server(world, server_comm, layout, config, std::vector<float>(layout.parameter_count, 0.0f));
    seen.server = server.serve(run.steps);
    const std::span<const float> model = server.gather_model();
    seen.final_model.assign(model.begin(), model.end());
  } else {
    const int me = world.rank() - servers;
    const bool slow = world.rank() == world.size() - 1;
    const std::unique_ptr<Synchronizer> sync = make_ps_worker(world, layout);
    std::vector<float> params(layout.parameter_count, 0.0f), grads(layout.parameter_count);
    min_gap = run.steps;
    for (long k = 0; k < run.steps; ++k) {
      std::fill(grads.begin(), grads.end(), 0.0f);
      for (int s = 0; s < servers; ++s) grads[clock_slot(layout, s, me)] = -static_cast<float>(workers);
      if (slow) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(run.slow_ms));
      sync->step(params, grads);
      for (int s = 0; s < servers; ++s) {
        std::vector<long> clocks;
        for (int w = 0; w < workers; ++w) clocks.push_back(std::lround(params[clock_slot(layout, s, w)]));
        const long mine = clocks[static_cast<std::size_t>(me)];
        const long slowest = *std::min_element(clocks.begin(), clocks.end());
        own_ok &= mine == k + 1 ? 1 : 0;
        lockstep &= std::all_of(clocks.begin(), clocks.end(), [&](long c) { return c == mine; }) ? 1 : 0;
        max_gap = std::max(max_gap, mine - slowest);
        min_gap = std::min(min_gap, mine - slowest);
      }
    }
  }
  if (is_server) min_gap = run.steps;  // servers observe nothing; neutral for the reductions below
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &max_gap, 1, MPI_LONG, MPI_MAX, world.native()), "MPI_Allreduce", world.rank());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &min_gap, 1, MPI_LONG, MPI_MIN, world.native()), "MPI_Allreduce", world.rank());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &lockstep, 1, MPI_INT, MPI_MIN, world.native()), "MPI_Allreduce", world.rank());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &own_ok, 1, MPI_INT, MPI_MIN, world.native()), "MPI_Allreduce", world.rank());
  seen.max_gap = max_gap;
  seen.min_gap = min_gap;
  seen.lockstep = lockstep != 0;
  seen.own_clock_ok = own_ok != 0;
  return seen;
}

// On server 0: every coordinate ends at `steps`, i.e. each of W*steps gradients was applied once, scaled by 1/W.
void check_every_gradient_applied_once(const Observed& seen, const PsRun& run, int workers) {
  REQUIRE(seen.final_model.size() == static_cast<std::size_t>(run.servers * workers));
  for (float c : seen.final_model) CHECK(c == static_cast<float>(run.steps));
  CHECK(seen.server.gradients_applied == static_cast<double>(run.steps * workers));
}

}  // namespace

TEST_CASE("BSP and SSP with bound 0 keep every worker in lockstep: the clock gap is 0 at every release") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a clock gap needs a server and 2 workers: 3 ranks");
  for (const PsRun& run : {PsRun{PsMode::bsp, 0, 1}, PsRun{PsMode::ssp, 0, 1}, PsRun{PsMode::bsp, 0, 2}}) {
    if (world.size() - run.servers < 2) continue;
    CAPTURE(ps_mode_name(run.mode));
    CAPTURE(run.servers);
    const Observed seen = run_ps(world, run);
    CHECK(seen.own_clock_ok);
    CHECK(seen.lockstep);
    CHECK(seen.max_gap == 0);
    if (world.rank() == 0) {
      CHECK(seen.server.clock_gap_max == 0);
      check_every_gradient_applied_once(seen, run, world.size() - run.servers);
    }
  }
}

TEST_CASE("SSP with bound S lets a fast worker run exactly S steps ahead of a straggler, never more") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a clock gap needs a server and 2 workers: 3 ranks");
  for (const PsRun& run : {PsRun{PsMode::ssp, 1, 1}, PsRun{PsMode::ssp, 2, 1}, PsRun{PsMode::ssp, 2, 2}}) {
    if (world.size() - run.servers < 2) continue;
    CAPTURE(run.staleness);
    CAPTURE(run.servers);
    const Observed seen = run_ps(world, run);
    CHECK(seen.own_clock_ok);
    CHECK(seen.max_gap == run.staleness);  // "never more" holds by construction, "exactly" through the straggler
    CHECK(seen.min_gap >= 0);
    if (world.rank() == 0) {
      CHECK(seen.server.clock_gap_max == static_cast<double>(seen.max_gap));  // the server reports what workers saw
      check_every_gradient_applied_once(seen, run, world.size() - run.servers);
    }
  }
}

TEST_CASE("ASP lets fast workers run further ahead of a straggler than an SSP bound would") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "a clock gap needs a server and 2 workers: 3 ranks");
  const int bound = 2;
  for (int servers : {1, 2}) {
    const PsRun run{PsMode::asp, bound, servers};
    if (world.size() - run.servers < 2) continue;
    CAPTURE(servers);
    const Observed seen = run_ps(world, run);
    CHECK(seen.own_clock_ok);
    // The straggler's first push comes after a sleep the others spend running all their steps.
    CHECK(seen.max_gap > bound);
    if (world.rank() == 0) {
      CHECK(seen.server.clock_gap_max == static_cast<double>(seen.max_gap));
      check_every_gradient_applied_once(seen, run, world.size() - run.servers);
    }
  }
}

TEST_CASE("the server applies each gradient with the documented scale: 1/W for gradient and weight decay") {
  // Every worker pushes the same gradient, so each asynchronous update is the same map whatever the arrival order
  // and the final model has a closed form: W*steps updates of
  //   v = mu v + g/W + (wd/W) p;  p -= lr v        (asp, ssp)
  // against steps updates of
  //   v = mu v + (W g)/W + wd p;  p -= lr v        (bsp: the W gradients summed, then one step)
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "a parameter server and a worker need 2 ranks");
  const int servers = 1, workers = world.size() - servers;
  const long steps = 4;
  const std::size_t n = 6;
  const PsLayout layout{servers, workers, n};
  const Comm server_comm = world.split(world.rank() < servers ? 0 : MPI_UNDEFINED, world.rank());
  std::vector<float> start(n), gradient(n);
  for (std::size_t i = 0; i < n; ++i) {
    start[i] = 0.5f - 0.25f * static_cast<float>(i);
    gradient[i] = 0.125f * static_cast<float>(i) - 0.3f;
  }
  for (const PsMode mode : {PsMode::asp, PsMode::ssp, PsMode::bsp}) {
    for (const SgdOptions sgd :
         {SgdOptions{0.1f, 0.0f, 0.05f}, SgdOptions{0.1f, 0.9f, 0.05f}, SgdOptions{0.1f, 0.5f, 0.0f}}) {
      CAPTURE(ps_mode_name(mode));
      CAPTURE(sgd.momentum);
      CAPTURE(sgd.weight_decay);
      TrainConfig config;
      config.sync = sync_method("ps");
      set_ps_options(config, {.mode = mode, .staleness = 1});
      config.sgd = sgd;
      if (world.rank() < servers) {
        ParameterServer server(world, server_comm, layout, config, start);
        const EpochWork work = server.serve(steps);
        const std::span<const float> got = server.gather_model();
        const bool async = mode != PsMode::bsp;
        const double w = workers, decay = async ? 1.0 / w : 1.0;
        const double pushed = async ? 1.0 : w;  // gradients summed into one update, scaled by 1/W like one alone
        const long updates = async ? steps * workers : steps;
        REQUIRE(got.size() == n);
        for (std::size_t i = 0; i < n; ++i) {
          double p = start[i], v = 0;
          for (long u = 0; u < updates; ++u) {
            v = sgd.momentum * v + pushed / w * gradient[i] + sgd.weight_decay * decay * p;
            p -= sgd.lr * v;
          }
          CHECK(got[i] == doctest::Approx(p).epsilon(1e-5));
        }
        CHECK(work.gradients_applied == static_cast<double>(steps * workers));
      } else {
        const std::unique_ptr<Synchronizer> sync = make_ps_worker(world, layout);
        std::vector<float> params = start, grads(n);
        for (long k = 0; k < steps; ++k) {
          grads = gradient;
          sync->step(params, grads);
        }
      }
    }
  }
}
