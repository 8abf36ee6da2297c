// One kernel plan on every rank: a user's BLIS_ARCH_TYPE on some ranks wins on all of them, users who disagree and
// ranks that share no set are refused with the ranks named, a rank that cannot run rank 0's plan puts every rank on
// one common set, and a failure on rank 0 reaches every rank instead of leaving them waiting.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/kernels/agreement.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/mlp.hpp"
#include "test_support.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"

using namespace gradsync;

namespace {

RankKernels rank_kernels(std::string arch, std::vector<std::string> others, bool user = false) {
  RankKernels k{arch, user, {arch}};
  for (std::string& set : others) k.runs.push_back(std::move(set));
  return k;
}

// A measured plan as make_kernel_plan would return it, counting its calls.
struct FakeMaker {
  std::vector<std::string> sets;
  int calls = 0;
  KernelPlan operator()() {
    ++calls;
    KernelPlan plan;
    plan.source = "measured";
    for (std::size_t i = 0; i < sets.size(); ++i) plan.gemms.push_back({{false, false, 10 + i, 32, 784}, sets[i], {}});
    return plan;
  }
};

// A set other than the process's default that it runs by context, or "" where there is none.
std::string second_set(const BlisConfig& blis) {
  for (const std::string& set : blis.kernel_sets)
    if (set != blis.arch && can_run_kernels(blis, set)) return set;
  return "";
}

}  // namespace

TEST_CASE("what a rank runs survives its text form, and a damaged line is refused") {
  const RankKernels k = rank_kernels("zen3", {"skx", "zen2", "bytes"}, true);
  const auto back = RankKernels::from_text(k.to_text());
  REQUIRE(back);
  CHECK(back->arch == "zen3");
  CHECK(back->user_arch);
  CHECK(back->runs == k.runs);
  for (const char* bad : {"", "zen3", "zen3 user=1", "zen3 user=2 runs=zen3", "zen3 user=0 runs=skx,zen3",
                          "zen3 user=0 runs=zen3,,skx", "zen3 user=0 runs=zen3 extra", "zen3 user=0 sets=zen3"}) {
    CAPTURE(bad);
    CHECK_FALSE(RankKernels::from_text(bad));
  }
}

TEST_CASE("ranks agree on rank 0's plan, with rank 0's default set for the shapes it does not list") {
  FakeMaker make{{"skx", "zen3"}};
  const std::vector<RankKernels> ranks(4, rank_kernels("zen3", {"skx", "zen2", "bytes"}));
  const KernelPlan plan = agree_kernel_plan(ranks, std::ref(make));
  CHECK(make.calls == 1);
  CHECK(plan.gemms.size() == 2);
  CHECK(plan.fallback == "zen3");
  CHECK(plan.source == "measured");
}

TEST_CASE("a user's BLIS_ARCH_TYPE on some ranks runs every shape on every rank, and nothing is measured") {
  FakeMaker make{{"skx"}};
  std::vector<RankKernels> ranks(4, rank_kernels("zen3", {"skx", "zen2"}));
  ranks[2] = rank_kernels("zen2", {}, true);  // the launcher forwarded BLIS_ARCH_TYPE=zen2 to rank 2 only
  KernelPlan plan = agree_kernel_plan(ranks, std::ref(make));
  CHECK(make.calls == 0);
  CHECK(plan.gemms.empty());
  CHECK(plan.fallback == "zen2");
  CHECK(plan.source.find("rank 2") != std::string::npos);

  ranks[0] = rank_kernels("zen2", {}, true);  // and to rank 0
  plan = agree_kernel_plan(ranks, std::ref(make));
  CHECK(plan.fallback == "zen2");
  CHECK(plan.source.find("ranks 0, 2") != std::string::npos);
  for (RankKernels& k : ranks) k = rank_kernels("zen2", {}, true);
  CHECK(agree_kernel_plan(ranks, std::ref(make)).source == "BLIS_ARCH_TYPE set by the user");
  CHECK(make.calls == 0);
}

TEST_CASE("users who name different sets, or a set a rank cannot run, are refused with the ranks named") {
  FakeMaker make{{"zen3"}};
  std::vector<RankKernels> ranks(4, rank_kernels("zen3", {"zen2"}));
  ranks[1] = rank_kernels("zen2", {}, true);
  ranks[3] = rank_kernels("haswell", {}, true);
  CHECK_THROWS_WITH_AS(agree_kernel_plan(ranks, std::ref(make)),
                       doctest::Contains("kernel set zen2 on rank 1 but haswell on rank 3"), std::invalid_argument);
  ranks[3] = rank_kernels("zen2", {}, true);
  ranks[2] = rank_kernels("zen3", {});  // without per-call contexts: it runs its own set only
  CHECK_THROWS_WITH_AS(agree_kernel_plan(ranks, std::ref(make)), doctest::Contains("which rank 2 cannot run"),
                       std::invalid_argument);
  CHECK(make.calls == 0);
}

TEST_CASE("a rank that cannot run rank 0's plan puts every rank on one set that all of them run") {
  FakeMaker make{{"skx", "bytes"}};
  std::vector<RankKernels> ranks(4, rank_kernels("zen3", {"skx", "zen2", "bytes"}));
  ranks[3] = rank_kernels("zen3", {"zen2"});  // a host without AVX-512
  KernelPlan plan = agree_kernel_plan(ranks, std::ref(make));
  CHECK(plan.gemms.empty());
  CHECK(plan.fallback == "zen3");
  CHECK(plan.source.find("rank 3 cannot run skx") != std::string::npos);

  ranks[3] = rank_kernels("zen2", {});  // another default set, and no contexts: only zen2 runs there
  plan = agree_kernel_plan(ranks, std::ref(make));
  CHECK(plan.fallback == "zen2");
  CHECK(plan.gemms.empty());

  ranks[3] = rank_kernels("haswell", {});
  CHECK_THROWS_WITH_AS(agree_kernel_plan(ranks, std::ref(make)),
                       doctest::Contains("no BLIS kernel set runs on every rank (rank 0 runs zen3, skx, zen2, bytes; "
                                         "rank 3 runs haswell)"),
                       std::invalid_argument);
}

TEST_CASE("a plan's fallback runs every shape it does not list" * doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  const BlisConfig& blis = configured_blis();
  const GemmShape listed{false, false, 16, 4, 20}, other{false, true, 4, 16, 4};
  const std::string another = second_set(blis);
  SKIP_UNLESS(!another.empty(), test::kNoSecondKernelSet);
  KernelPlan plan;
  plan.gemms.push_back({listed, blis.arch, {}});
  plan.fallback = another;
  install_kernel_plan(plan, blis);
  CHECK(planned_context(listed) == kernel_set_context(blis.arch));
  CHECK(planned_context(other) == kernel_set_context(another));
  plan.fallback = "bulldozer";  // in BLIS's list, never runnable here
  CHECK_THROWS_AS(install_kernel_plan(plan, blis), std::invalid_argument);
  CHECK(installed_kernel_plan().fallback == another);
}

TEST_CASE("every rank runs the set a user's BLIS_ARCH_TYPE names on one rank only" *
          doctest::test_suite("needs_kernel_sets")) {
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const BlisConfig& real = configured_blis();
  const std::string other = second_set(real);
  SKIP_UNLESS(!other.empty(), test::kNoSecondKernelSet);
  BlisConfig mine = real;
  const bool user_rank = world.rank() == world.size() - 1;
  if (user_rank) {  // as configure_blis leaves a process that read BLIS_ARCH_TYPE=<other>
    mine.arch = other;
    mine.user_arch = true;
    mine.kernel_sets.clear();
  }
  int measured = 0;
  const KernelPlanMaker counting = [&measured](std::span<const GemmShape> s, const BlisConfig& b) {
    ++measured;
    return make_kernel_plan(s, b);
  };
  const std::vector<GemmShape> shapes = Mlp({20, 16, 4}).planned_gemms(4);
  const KernelPlan plan = install_agreed_kernel_plan(world, shapes, mine, counting);
  CHECK(measured == 0);
  CHECK(plan.gemms.empty());
  CHECK(plan.fallback == other);
  CHECK(installed_kernel_plan().fallback == other);
  if (!user_rank)
    for (const GemmShape& g : shapes) CHECK(planned_context(g) == kernel_set_context(other));
}

TEST_CASE("ranks that cannot agree, or a rank 0 that fails to plan, stop every rank with the same message") {
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const std::string before = installed_kernel_plan().to_text();
  const std::vector<GemmShape> shapes = Mlp({20, 16, 4}).planned_gemms(4);
  BlisConfig mine = configured_blis();
  if (world.size() > 1 && world.rank() == world.size() - 1) {  // a user set on one rank, another user set elsewhere
    mine.user_arch = true;
    mine.arch = "haswell";
  } else if (world.rank() == 0) {
    mine.user_arch = true;
    mine.arch = "zen2";
  }
  if (world.size() > 1)
    CHECK_THROWS_WITH_AS(install_agreed_kernel_plan(world, shapes, mine),
                         doctest::Contains("zen2 on rank 0 but haswell on rank"), KernelPlanError);

  const KernelPlanMaker failing = [](std::span<const GemmShape>, const BlisConfig&) -> KernelPlan {
    throw std::runtime_error("the cache directory is a file");
  };
  BlisConfig planning = configured_blis();
  planning.user_arch = false;  // a user's BLIS_ARCH_TYPE would decide without calling `failing`
  CHECK_THROWS_WITH_AS(install_agreed_kernel_plan(world, shapes, planning, failing),
                       doctest::Contains("the cache directory is a file"), KernelPlanError);
  CHECK(installed_kernel_plan().to_text() == before);
}
