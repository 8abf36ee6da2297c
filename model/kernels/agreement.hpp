#pragma once
// One kernel plan for every rank of a run. Kernel sets round differently, so ranks that ran different sets on a
// shape would make a run's bits depend on which process computed which shard. Ranks need not start out equal: a
// user's BLIS_ARCH_TYPE reaches only the ranks the launcher forwards it to (Open MPI needs -x), and hosts may have
// other CPUs, so other default sets. Rank 0 decides from what every rank can run; trainers/loop/agreed_kernel_plan.hpp
// carries the texts between ranks. Knows nothing about MPI.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/plan_format.hpp"

namespace gradsync {

// What one rank can run, as rank 0 learns it.
struct RankKernels {
  std::string arch;        // its default set (BlisConfig::arch)
  bool user_arch = false;  // chosen by the user's BLIS_ARCH_TYPE
  // Every set can_run_kernels accepts there, `arch` first; the byte kernels as "bytes/<instruction set>"
  // (byte_gemm_kernels()), since those of different sets compute different bits.
  std::vector<std::string> runs;

  static RankKernels of(const BlisConfig& blis);
  bool can_run(std::string_view set) const;
  // One line, "zen3 user=0 runs=zen3,skx,bytes/avx512"; from_text refuses anything else.
  std::string to_text() const;
  static std::optional<RankKernels> from_text(std::string_view text);
};

// The plan every rank installs, given each rank's RankKernels (rank 0 first; at least one):
// - where users set BLIS_ARCH_TYPE (on any rank), the set they name runs every shape on every rank, the ranks
//   without the variable included, and `rank0_plan` is not called: nothing is measured;
// - otherwise `rank0_plan()` (make_kernel_plan's cache or measurement on rank 0), with rank 0's default set as
//   the fallback for the shapes it does not list;
// - where some rank cannot run a set that plan names, one set runs every shape on every rank: rank 0's default
//   set if every rank runs it, else the first of rank 0's sets that every rank runs; the plan's source says why.
// Throws std::invalid_argument, naming the ranks, if users named different sets, a rank cannot run the set
// users named, or no set runs on every rank.
KernelPlan agree_kernel_plan(std::span<const RankKernels> ranks, const std::function<KernelPlan()>& rank0_plan);

}  // namespace gradsync
