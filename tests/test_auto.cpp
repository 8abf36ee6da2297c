// auto: the cost model it chooses with, the tuning file it reads, and that every rank makes the same choice.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/auto_allreduce.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/methods.hpp"
#include "test_support.hpp"

using namespace gradsync;

TEST_CASE("the cost model: latency-optimal methods for small messages, bandwidth-optimal ones for large") {
  const CostModel m = default_cost_model();
  const auto t = [&](const char* method, std::size_t bytes, int p, int per_host) {
    return *m.predict(method, bytes, p, per_host, std::size_t{16} << 20);
  };
  // 16 ranks on 16 hosts: log2 P latencies beat 2(P-1) for a small buffer; for a large one the bytes decide.
  CHECK(t("rd", 64, 16, 1) < t("ring", 64, 16, 1));
  CHECK(t("rhd", 64 << 20, 16, 1) <= t("rd", 64 << 20, 16, 1));
  CHECK(t("ring", 64 << 20, 16, 1) < t("rd", 64 << 20, 16, 1));
  // Several ranks per host: hier sends 1/L of the buffer over each host's link per rank, where a flat ring's
  // boundary rank sends 2(P-1)/P of it.
  CHECK(t("hier", 64 << 20, 16, 4) < t("ring", 64 << 20, 16, 4));
  // Two hosts: every cross-host step of rd, rhd and hier is a pairwise exchange, which costs the exchange factor.
  CostModel symmetric = m, slowed = m;
  symmetric.inter_exchange_factor = 1;
  slowed.inter_exchange_factor = 2;
  CHECK(*slowed.predict("rhd", 64 << 20, 2, 1, 0) > *symmetric.predict("rhd", 64 << 20, 2, 1, 0));
  CHECK_FALSE(m.predict("hier", 1024, 4, 1, 0).has_value());  // hosts of one rank: hier is the ring
  CHECK_FALSE(m.predict("mpi", 1024, 4, 1, 0).has_value());   // the vendor's algorithm is not modelled
  CHECK(*m.predict("ring", 0, 4, 1, 0) == 0.0);
}

TEST_CASE("a tuning file sets the parameters it names and is refused with its file and line when malformed") {
  const auto dir = test::temp_dir("tuning", Comm::world().rank());
  const std::string good = (dir / "good.txt").string(), bad = (dir / "bad.txt").string();
  std::ofstream(good) << "# fitted\ninter_alpha_us = 40\ninter_beta_ns_per_byte=2.5 # 3.2 Gbit/s\n";
  std::ofstream(bad) << "intra_alpha_us = 1\ngamma_ns_per_byte = fast\n";
  const CostModel m = load_cost_model(good);
  CHECK(m.inter.alpha_s == doctest::Approx(40e-6));
  CHECK(m.inter.beta_s_per_byte == doctest::Approx(2.5e-9));
  CHECK(m.intra.alpha_s == default_cost_model().intra.alpha_s);  // not named: the default stays
  CHECK(m.source == good);
  CHECK_THROWS_WITH_AS(load_cost_model(bad), doctest::Contains("bad.txt line 2"), std::runtime_error);
  CHECK_THROWS_WITH_AS(load_cost_model((dir / "missing.txt").string()), doctest::Contains("cannot be read"),
                       std::runtime_error);
  std::ofstream(bad) << "inter_latency_us = 3\n";
  CHECK_THROWS_WITH_AS(load_cost_model(bad), doctest::Contains("unknown key 'inter_latency_us'"), std::runtime_error);
}

namespace {

// What auto must choose for `bytes` on p ranks, `per_host` to a host: among the registry's modelled methods that
// apply to the layout and that `keep` admits, the first in the registry's order whose prediction is within the tie
// margin of the fastest one's.
std::string expected_choice(const CostModel& model, std::size_t bytes, int p, int per_host,
                            const std::function<bool(const AllreduceMethod&)>& keep) {
  std::vector<std::pair<std::string, double>> predicted;
  double fastest = 1e300;
  for (const AllreduceMethod& m : allreduce_method_table()) {
    if (!m.modelled || !keep(m) || (m.two_level && (per_host <= 1 || per_host >= p))) continue;
    const auto t = model.predict(m.name, bytes, p, per_host, m.chunked ? kSharedMemoryChunkBytes : 0);
    if (!t) continue;
    predicted.emplace_back(m.name, *t);
    fastest = std::min(fastest, *t);
  }
  for (const auto& [name, t] : predicted)
    if (t <= fastest * (1 + AutoAllreduce::kTieMargin)) return name;
  return "";
}

}  // namespace

TEST_CASE("auto makes the model's choice, the same on every rank, and sums exactly with it") {
  const Comm world = Comm::world();
  for (int per_host : {0, 1, 2}) {
    if (per_host > 0 && world.size() % per_host != 0) continue;
    AllreduceOptions options;
    options.ranks_per_host = per_host;
    AutoAllreduce a(world, options, allreduce_method_table());
    const int l = per_host > 0 ? per_host : world.size();
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 22}) {
      const std::string chosen(a.choice(count, Dtype::f32));
      const std::string best =
          expected_choice(a.model(), count * 4, world.size(), l, [](const AllreduceMethod&) { return true; });
      CAPTURE(per_host);
      CAPTURE(count);
      CHECK(chosen == best);
      const auto [lo, hi] = world.min_max(std::hash<std::string>{}(chosen));
      CHECK(lo == hi);
      std::vector<float> data(count, static_cast<float>(world.rank() + 1));
      a.run(std::span<float>(data));
      CHECK(data.front() == static_cast<float>(world.size() * (world.size() + 1) / 2));
      CHECK(data.back() == data.front());
    }
  }
}

TEST_CASE("GRADSYNC_AUTO_METHODS narrows auto's candidates on every rank to rank 0's list, and refuses a bad one") {
  const Comm world = Comm::world();
  struct AutoMethods {  // the variable for this case only, per rank; the caller's value comes back after
    explicit AutoMethods(const char* value) {
      if (const char* old = std::getenv("GRADSYNC_AUTO_METHODS")) outer = old;
      value ? ::setenv("GRADSYNC_AUTO_METHODS", value, 1) : ::unsetenv("GRADSYNC_AUTO_METHODS");
    }
    ~AutoMethods() { outer ? ::setenv("GRADSYNC_AUTO_METHODS", outer->c_str(), 1) : ::unsetenv("GRADSYNC_AUTO_METHODS"); }
    std::optional<std::string> outer;
  };
  AllreduceOptions flat;
  flat.ranks_per_host = 1;
  const std::vector<std::size_t> counts{1, std::size_t{1} << 22};
  SUBCASE("rank 0's list is every rank's: rd alone, whatever the others say") {
    {
      const AutoMethods unset(nullptr);
      AutoAllreduce a(world, flat, allreduce_method_table());
      REQUIRE(a.choice(counts.back(), Dtype::f32) != "rd");  // or the narrowing below would show nothing
    }
    const AutoMethods env(world.rank() == 0 ? "rd" : "ring");
    AutoAllreduce a(world, flat, allreduce_method_table());
    for (std::size_t count : counts) {
      CAPTURE(count);
      CHECK(a.choice(count, Dtype::f32) == "rd");
      std::vector<float> data(count, static_cast<float>(world.rank() + 1));
      a.run(std::span<float>(data));
      CHECK(data.back() == static_cast<float>(world.size() * (world.size() + 1) / 2));
    }
  }
  SUBCASE("a list of two (in any order, spaces allowed) keeps the model's choice between them") {
    const AutoMethods env(" rhd, rd");
    AutoAllreduce a(world, flat, allreduce_method_table());
    for (std::size_t count : counts) {
      CAPTURE(count);
      CHECK(a.choice(count, Dtype::f32) ==
            expected_choice(a.model(), count * 4, world.size(), 1,
                            [](const AllreduceMethod& m) { return m.name == "rd" || m.name == "rhd"; }));
    }
  }
  SUBCASE("a name auto cannot choose is refused on every rank, naming it") {
    const AutoMethods env(world.rank() == 0 ? "rd,mpi" : "rd");
    CHECK_THROWS_WITH_AS(AutoAllreduce(world, flat, allreduce_method_table()),
                         doctest::Contains(world.rank() == 0 ? "'mpi' is not a method auto can choose"
                                                             : "rank 0 refused its GRADSYNC_AUTO_METHODS"),
                         std::runtime_error);
  }
  SUBCASE("a list that leaves nothing for the layout is refused on every rank") {
    const AutoMethods env("hier");  // hosts of one rank: hier would be the ring, so it is no candidate
    CHECK_THROWS_WITH_AS(AutoAllreduce(world, flat, allreduce_method_table()), doctest::Contains("leaves no method"),
                         std::runtime_error);
  }
}
