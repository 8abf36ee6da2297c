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

TEST_CASE("the cost model's far link: paid by the ring once it spans switches, by a butterfly on crossing steps") {
  CostModel near = default_cost_model();
  near.far.alpha_s = near.inter.alpha_s;
  near.hosts_per_switch = 32;
  CostModel far = near;
  far.far.alpha_s = near.inter.alpha_s + 10e-6;
  const auto extra = [&](const char* method, int p, int per_host) {  // what the far link's alpha adds, in alphas
    return (*far.predict(method, 8, p, per_host, 0) - *near.predict(method, 8, p, per_host, 0)) / 10e-6;
  };
  // 32 hosts of one rank fit under one switch: nothing crosses.
  CHECK(extra("ring", 32, 1) == doctest::Approx(0));
  CHECK(extra("rd", 32, 1) == doctest::Approx(0));
  // 64 hosts: every one of the ring's 2 (p - 1) steps waits for a pair that crosses; rd's step between ranks 32
  // apart is its one crossing step, and rhd crosses there twice (halving, then doubling).
  CHECK(extra("ring", 64, 1) == doctest::Approx(2 * 63));
  CHECK(extra("rd", 64, 1) == doctest::Approx(1));
  CHECK(extra("rhd", 64, 1) == doctest::Approx(2));
  CHECK(extra("rd", 1024, 1) == doctest::Approx(5));  // distances 32 .. 512
  // Hosts of 8 ranks: 256 ranks are 32 hosts (one switch), 512 are 64; the crossing is 32 hosts = 256 ranks apart.
  CHECK(extra("rd", 256, 8) == doctest::Approx(0));
  CHECK(extra("rd", 512, 8) == doctest::Approx(1));
  CHECK(extra("hier", 512, 8) == doctest::Approx(2 * 63));  // its ring across the 64 hosts
  CHECK(extra("hier", 256, 8) == doctest::Approx(0));
  // Not a power of two: 48 ranks fold 32 of them pairwise, which puts core ranks 0 and 16 on ranks 1 and 32, so the
  // core step 16 apart crosses a switch.
  CHECK(extra("rd", 48, 1) == doctest::Approx(1));
  // Nor the switch: with 24 hosts to a switch, rd's steps 8, 16 and 32 apart each have pairs that cross.
  far.hosts_per_switch = near.hosts_per_switch = 24;
  CHECK(extra("rd", 64, 1) == doctest::Approx(3));
  // One host to a switch: even a ring of two hosts crosses, as a pairwise exchange.
  far.hosts_per_switch = near.hosts_per_switch = 1;
  CHECK(extra("ring", 2, 1) == doctest::Approx(2));
  // No switch size: one switch, however many hosts.
  far.hosts_per_switch = near.hosts_per_switch = 0;
  CHECK(extra("ring", 1024, 1) == doctest::Approx(0));
  // The far link's rate: rhd's last halving and first doubling step move n/p bytes each across, at p = 64.
  far.hosts_per_switch = near.hosts_per_switch = 32;
  far.far = near.far;
  far.far.beta_s_per_byte = 2 * near.far.beta_s_per_byte;
  const std::size_t big = std::size_t{64} << 20;
  CHECK(*far.predict("rhd", big, 64, 1, 0) - *near.predict("rhd", big, 64, 1, 0) ==
        doctest::Approx(2 * (big / 64.0) * near.far.beta_s_per_byte * near.inter_exchange_factor));
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
  // The far link defaults to the file's own inter link, not to the built-in one.
  CHECK(m.far.alpha_s == m.inter.alpha_s);
  CHECK(m.far.beta_s_per_byte == m.inter.beta_s_per_byte);
  CHECK(m.hosts_per_switch == 0);
  const std::string far = (dir / "far.txt").string();
  std::ofstream(far) << "inter_alpha_us = 1\nfar_alpha_us = 2.5\nhosts_per_switch = 32\n";
  const CostModel f = load_cost_model(far);
  CHECK(f.far.alpha_s == doctest::Approx(2.5e-6));
  CHECK(f.far.beta_s_per_byte == f.inter.beta_s_per_byte);
  CHECK(f.hosts_per_switch == 32);
  std::ofstream(far) << "far_beta_ns_per_byte = 0.9\n";
  CHECK(load_cost_model(far).far.beta_s_per_byte == doctest::Approx(0.9e-9));
  std::ofstream(bad) << "hosts_per_switch = 32.5\n";
  CHECK_THROWS_WITH_AS(load_cost_model(bad), doctest::Contains("hosts_per_switch must be a whole number"),
                       std::runtime_error);
  std::ofstream(bad) << "hosts_per_switch = 1e9\n";
  CHECK_THROWS_WITH_AS(load_cost_model(bad), doctest::Contains("from 0 to"), std::runtime_error);
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
    if (!m.modelled() || !keep(m) || (m.two_level && (per_host <= 1 || per_host >= p))) continue;
    const auto t = model.predict(m.name, bytes, p, per_host, m.chunked ? kSharedMemoryChunkBytes : 0);
    if (!t) continue;
    predicted.emplace_back(m.name, *t);
    fastest = std::min(fastest, *t);
  }
  for (const auto& [name, t] : predicted)
    if (t <= fastest * (1 + AutoAllreduce::kTieMargin)) return name;
  return "";
}

// An environment variable set (or unset, with nullptr) on this rank for one scope; the caller's value comes back
// after.
struct ScopedEnv {
  ScopedEnv(const char* variable, const char* value) : name(variable) {
    if (const char* old = std::getenv(name)) outer = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { outer ? ::setenv(name, outer->c_str(), 1) : ::unsetenv(name); }
  const char* name;
  std::optional<std::string> outer;
};

}  // namespace

TEST_CASE("auto makes the model's choice, the same on every rank, and sums exactly with it") {
  const Comm world = Comm::world();
  for (int per_host : {0, 1, 2}) {
    if (per_host > 0 && world.size() % per_host != 0) continue;
    AllreduceOptions options;
    options.own.set(kRanksPerHostOption, per_host);
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
  AllreduceOptions flat;
  flat.own.set(kRanksPerHostOption, 1);
  const std::vector<std::size_t> counts{1, std::size_t{1} << 22};
  SUBCASE("rank 0's list is every rank's: rd alone, whatever the others say") {
    {
      const ScopedEnv unset("GRADSYNC_AUTO_METHODS", nullptr);
      AutoAllreduce a(world, flat, allreduce_method_table());
      REQUIRE(a.choice(counts.back(), Dtype::f32) != "rd");  // or the narrowing below would show nothing
    }
    const ScopedEnv env("GRADSYNC_AUTO_METHODS", world.rank() == 0 ? "rd" : "ring");
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
    const ScopedEnv env("GRADSYNC_AUTO_METHODS", " rhd, rd");
    AutoAllreduce a(world, flat, allreduce_method_table());
    for (std::size_t count : counts) {
      CAPTURE(count);
      CHECK(a.choice(count, Dtype::f32) ==
            expected_choice(a.model(), count * 4, world.size(), 1,
                            [](const AllreduceMethod& m) { return m.name == "rd" || m.name == "rhd"; }));
    }
  }
  SUBCASE("a name auto cannot choose is refused on every rank, naming it") {
    const ScopedEnv env("GRADSYNC_AUTO_METHODS", world.rank() == 0 ? "rd,mpi" : "rd");
    CHECK_THROWS_WITH_AS(AutoAllreduce(world, flat, allreduce_method_table()),
                         doctest::Contains(world.rank() == 0 ? "'mpi' is not a method auto can choose"
                                                             : "rank 0 refused its GRADSYNC_AUTO_METHODS"),
                         std::runtime_error);
  }
  SUBCASE("a list that leaves nothing for the layout is refused on every rank") {
    const ScopedEnv env("GRADSYNC_AUTO_METHODS",
                        "hier");  // hosts of one rank: hier would be the ring, so it is no candidate
    CHECK_THROWS_WITH_AS(AutoAllreduce(world, flat, allreduce_method_table()), doctest::Contains("leaves no method"),
                         std::runtime_error);
  }
}

TEST_CASE("auto plans with rank 0's far link and switch size on every rank") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 4, "needs 4 ranks: 2 hosts of one rank per switch, and more than one switch");
  // Rank 0 reads a tuning file whose far link is slow enough to move the choice; the others read one without it.
  const auto dir = test::temp_dir("tuning-far", world.rank());
  const std::string far = (dir / "far.txt").string(), plain = (dir / "plain.txt").string();
  std::ofstream(far) << "far_alpha_us = 100000\nhosts_per_switch = 2\n";
  std::ofstream(plain) << "# the built-in parameters\n";
  AllreduceOptions flat;
  flat.own.set(kRanksPerHostOption, 1);
  const std::size_t count = std::size_t{1} << 22;
  const auto any = [](const AllreduceMethod&) { return true; };
  const std::string near_choice = expected_choice(load_cost_model(plain), count * 4, world.size(), 1, any);
  const std::string far_choice = expected_choice(load_cost_model(far), count * 4, world.size(), 1, any);
  REQUIRE(far_choice != near_choice);  // or a lost far link would show nothing
  const ScopedEnv env("GRADSYNC_TUNING", world.rank() == 0 ? far.c_str() : plain.c_str());
  AutoAllreduce a(world, flat, allreduce_method_table());
  CHECK(a.model().hosts_per_switch == 2);
  CHECK(a.model().far.alpha_s == doctest::Approx(0.1));
  CHECK(a.choice(count, Dtype::f32) == far_choice);
}
