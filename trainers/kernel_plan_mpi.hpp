#pragma once
// One kernel plan (model/kernel_plan.hpp) on every rank: rank 0 learns what each rank can run, decides
// (model/kernel_agreement.hpp) and sends the plan; every rank installs exactly that. Header-only so that model/
// stays free of MPI.
#include <fmt/format.h>
#include <mpi.h>

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/kernels/agreement.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/mlp.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// Thrown on every rank together when the ranks cannot agree on a plan (agree_kernel_plan's message: users set
// BLIS_ARCH_TYPE to different sets, no set runs everywhere) or rank 0 could not make one; `what()` is the same on
// every rank, so rank 0 alone need print it.
struct KernelPlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using KernelPlanMaker = std::function<KernelPlan(std::span<const GemmShape>, const BlisConfig&)>;

// Collective over `comm`: call on every rank, after MPI_Init and configure_blis, before any GEMM. Rank 0 makes the
// plan for its `shapes` with `make` (make_kernel_plan: the cache or a measurement; the other ranks' `shapes` are
// not used) unless a user's BLIS_ARCH_TYPE decides, agrees it with every rank's `blis` (this process's
// configure_blis result) and sends it as text; every rank installs it. Returns the installed plan;
// BlisConfig::summary() names it from then on. Throws KernelPlanError on every rank where no plan can be agreed
// (nothing installed anywhere), or where some rank could not install the agreed one (a bug: the others may have
// installed it, and the caller must stop); a failed MPI call throws MpiError naming it.
inline KernelPlan install_agreed_kernel_plan(MPI_Comm comm, std::span<const GemmShape> shapes,
                                             const BlisConfig& blis = configured_blis(),
                                             const KernelPlanMaker& make = make_kernel_plan) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", -1);
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size", rank);
  // A rank's RankKernels line is a few set names long; one that would not fit is sent empty, which rank 0 refuses.
  constexpr std::size_t kLine = 512;
  std::array<char, kLine> mine{};
  if (const std::string line = RankKernels::of(blis).to_text(); line.size() < kLine) line.copy(mine.data(), kLine - 1);
  std::vector<char> lines(rank == 0 ? kLine * static_cast<std::size_t>(size) : 0);
  check_mpi(MPI_Gather(mine.data(), kLine, MPI_CHAR, lines.data(), kLine, MPI_CHAR, 0, comm), "MPI_Gather", rank);

  // Rank 0's decision, or what stopped it: "plan\n# <source>\n<plan text>" or "error\n<message>".
  std::string text;
  if (rank == 0) {
    try {
      std::vector<RankKernels> ranks;
      for (int r = 0; r < size; ++r) {
        const auto k = RankKernels::from_text(lines.data() + static_cast<std::size_t>(r) * kLine);
        if (!k) throw std::invalid_argument(fmt::format("rank {} sent an unreadable list of kernel sets", r));
        ranks.push_back(*k);
      }
      const KernelPlan plan = agree_kernel_plan(ranks, [&] { return make(shapes, blis); });
      text = "plan\n# " + plan.source + "\n" + plan.to_text();
    } catch (const std::exception& e) {
      text = std::string("error\n") + e.what();
    } catch (...) {  // whatever `make` throws, the other ranks must not be left waiting
      text = "error\nrank 0 failed to make a plan";
    }
  }
  long length = static_cast<long>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_LONG, 0, comm), "MPI_Bcast", rank);
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm), "MPI_Bcast", rank);
  const std::size_t newline = text.find('\n');
  if (text.compare(0, newline, "error") == 0) throw KernelPlanError("kernel plan: " + text.substr(newline + 1));

  const std::size_t source_end = text.find('\n', newline + 1);
  std::optional<KernelPlan> plan = KernelPlan::from_text(text.substr(newline + 1));
  std::string problem = plan ? "" : "rank 0's plan arrived unreadable";
  if (plan) {
    plan->source = text.substr(newline + 3, source_end - newline - 3);
    if (rank != 0) plan->source = "rank 0's, " + plan->source;
    try {
      install_kernel_plan(*plan, blis);
    } catch (const std::exception& e) {
      problem = e.what();
    } catch (...) {
      problem = "unknown error";
    }
  }
  // agree_kernel_plan checked every rank's sets, so this is a bug if it happens: every rank stops, naming the first
  // rank that could not install the plan.
  int failed = problem.empty() ? size : rank, first_failed = size;
  check_mpi(MPI_Allreduce(&failed, &first_failed, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", rank);
  if (first_failed != size)
    throw KernelPlanError(fmt::format("kernel plan: rank {} could not install rank 0's plan{}", first_failed,
                                      problem.empty() ? "" : ": " + problem));
  return *plan;
}

// The same for a training run of `config` on `ranks` processes of MNIST-sized data (28 x 28 pixels, 10
// classes): its training and evaluation shapes. Data of another size runs on the plan's fallback set.
inline KernelPlan install_agreed_kernel_plan(MPI_Comm comm, const TrainConfig& config, int ranks) {
  constexpr std::size_t kPixels = 28 * 28, kClasses = 10;
  const Mlp model(config.layer_sizes(kPixels, kClasses));
  const std::size_t batch = config.per_worker_batch(ranks);
  const std::vector<GemmShape> shapes = batch > 0 ? model.planned_gemms(batch) : model.evaluation_gemms();
  return install_agreed_kernel_plan(comm, shapes);
}

}  // namespace gradsync
