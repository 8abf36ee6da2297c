#include "model/kernels/agreement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/kernel_sets.hpp"

namespace gradsync {
namespace {

// "rank 2", "ranks 1, 3", "ranks 0, 1, 2, 3, 4, 5 and 10 more"
std::string ranks_text(const std::vector<std::size_t>& ranks) {
  constexpr std::size_t kNamed = 6;
  std::vector<std::size_t> named(ranks.begin(), ranks.begin() + static_cast<long>(std::min(ranks.size(), kNamed)));
  std::string out = fmt::format("rank{} {}", ranks.size() == 1 ? "" : "s", fmt::join(named, ", "));
  if (ranks.size() > kNamed) out += fmt::format(" and {} more", ranks.size() - kNamed);
  return out;
}

// The first rank that cannot run `set`, if any.
std::optional<std::size_t> first_without(std::span<const RankKernels> ranks, std::string_view set) {
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (!ranks[r].can_run(set)) return r;
  return std::nullopt;
}

// How rank 0 lists kernel set `set`: the byte kernels with the instruction set they run on ("bytes/avx2"), since
// each set's byte kernels add in their own order. Another rank runs rank 0's byte kernels only under that name.
std::string as_rank0_lists(std::span<const RankKernels> ranks, std::string_view set) {
  if (set != kByteKernels) return std::string(set);
  for (const std::string& listed : ranks.front().runs)
    if (listed == set || listed.rfind(fmt::format("{}/", kByteKernels), 0) == 0) return listed;
  return std::string(set);
}

std::string runs_text(std::span<const RankKernels> ranks, std::size_t r) {
  return fmt::format("rank {} runs {}", r, fmt::join(ranks[r].runs, ", "));
}

}  // namespace

RankKernels RankKernels::of(const BlisConfig& blis) {
  RankKernels k{blis.arch, blis.user_arch, runnable_kernels(blis)};
  for (std::string& set : k.runs)
    if (set == kByteKernels) set = fmt::format("{}/{}", kByteKernels, byte_gemm_kernels());
  return k;
}

bool RankKernels::can_run(std::string_view set) const { return std::find(runs.begin(), runs.end(), set) != runs.end(); }

std::string RankKernels::to_text() const {
  return fmt::format("{} user={} runs={}", arch, user_arch ? 1 : 0, fmt::join(runs, ","));
}

std::optional<RankKernels> RankKernels::from_text(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string user, runs, extra;
  RankKernels k;
  if (!(in >> k.arch >> user >> runs) || in >> extra || (user != "user=0" && user != "user=1") ||
      runs.rfind("runs=", 0) != 0)
    return std::nullopt;
  k.user_arch = user == "user=1";
  std::istringstream sets(runs.substr(5));
  for (std::string set; std::getline(sets, set, ',');) {
    if (set.empty()) return std::nullopt;
    k.runs.push_back(set);
  }
  if (k.runs.empty() || k.runs.front() != k.arch) return std::nullopt;
  return k;
}

KernelPlan agree_kernel_plan(std::span<const RankKernels> ranks, const std::function<KernelPlan()>& rank0_plan) {
  if (ranks.empty()) throw std::invalid_argument("agree_kernel_plan: no ranks");
  std::vector<std::size_t> users;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].user_arch) users.push_back(r);

  if (!users.empty()) {
    const std::string& set = ranks[users.front()].arch;
    for (std::size_t r : users)
      if (ranks[r].arch != set)
        throw std::invalid_argument(fmt::format(
            "BLIS_ARCH_TYPE selects kernel set {} on rank {} but {} on rank {}: give every rank the same value "
            "(Open MPI: mpirun -x BLIS_ARCH_TYPE), or the ranks would compute different bits",
            set, users.front(), ranks[r].arch, r));
    if (const auto r = first_without(ranks, set))
      throw std::invalid_argument(fmt::format(
          "BLIS_ARCH_TYPE selects kernel set {} on {}, which rank {} cannot run ({}): give every rank the same "
          "BLIS_ARCH_TYPE, naming a set each of them runs",
          set, ranks_text(users), *r, runs_text(ranks, *r)));
    KernelPlan plan;
    plan.fallback = set;
    plan.source = users.size() == ranks.size()
                      ? "BLIS_ARCH_TYPE set by the user"
                      : fmt::format("BLIS_ARCH_TYPE set by the user on {}: every rank runs it", ranks_text(users));
    return plan;
  }

  KernelPlan plan = rank0_plan();
  plan.fallback = ranks.front().arch;
  std::optional<std::size_t> refusing;
  std::string refused;
  for (const PlannedGemm& g : plan.gemms)
    if (!refusing && (refusing = first_without(ranks, as_rank0_lists(ranks, g.kernels)))) refused = g.kernels;
  if (!refusing && (refusing = first_without(ranks, plan.fallback))) refused = plan.fallback;
  if (!refusing) return plan;

  for (const std::string& set : ranks.front().runs) {
    if (set.rfind(kByteKernels, 0) == 0 || first_without(ranks, set)) continue;
    KernelPlan common;
    common.fallback = set;
    common.source = fmt::format("{} cannot run {}, which rank 0's plan names: {} for every shape on every rank",
                                ranks_text({*refusing}), refused, set);
    return common;
  }
  throw std::invalid_argument(fmt::format(
      "no BLIS kernel set runs on every rank ({}; {}): give every rank the same BLIS_ARCH_TYPE (Open MPI: mpirun -x "
      "BLIS_ARCH_TYPE), or the ranks would compute different bits",
      runs_text(ranks, 0), runs_text(ranks, *refusing)));
}

}  // namespace gradsync
