#pragma once
// Rank 0's kernel plan (model/kernel_plan.hpp), adopted by every rank: kernel sets round differently, so ranks
// that each picked their own fastest set for a shape would make a run's bits depend on which process computed
// which shard. Header-only so that model/ stays free of MPI.
#include <mpi.h>

#include <span>
#include <string>
#include <vector>

#include "model/blis_setup.hpp"
#include "model/kernel_plan.hpp"
#include "model/mlp.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// Collective over `comm`: call on every rank, after MPI_Init and configure_blis, before any GEMM. Rank 0 makes
// the plan for its `shapes` (make_kernel_plan: the cache or a measurement; the other ranks' `shapes` are not
// used) and sends it as text; every rank installs exactly that plan if every rank can run its kernel sets, and
// otherwise no rank installs one (all run BLIS's default kernels, and the plan's source says why). Returns the
// installed plan; BlisConfig::summary() names it from then on.
inline KernelPlan adopt_rank0_kernel_plan(MPI_Comm comm, std::span<const GemmShape> shapes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const BlisConfig& blis = configured_blis();
  std::string text;
  if (rank == 0) {
    const KernelPlan mine = make_kernel_plan(shapes, blis);
    text = "# " + mine.source + "\n" + mine.to_text();
  }
  long length = static_cast<long>(text.size());
  MPI_Bcast(&length, 1, MPI_LONG, 0, comm);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm);
  std::optional<KernelPlan> plan = KernelPlan::from_text(text);
  int ok = plan ? 1 : 0;
  if (plan) {
    plan->source = text.substr(2, text.find('\n') - 2);
    if (rank != 0) plan->source = "rank 0's, " + plan->source;
    try {
      install_kernel_plan(*plan, blis.kernel_sets);
    } catch (const std::invalid_argument&) {
      ok = 0;
    }
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  if (!all_ok) {
    plan = KernelPlan{};
    plan->source = "rank 0's plan names kernels some rank cannot run: default kernels on every rank";
    install_kernel_plan(*plan, blis.kernel_sets);
  }
  return *plan;
}

// The same for a training run of `config` on `ranks` processes of MNIST-sized data (28 x 28 pixels, 10
// classes): its training and evaluation shapes. Data of another size runs on BLIS's default kernels.
inline KernelPlan adopt_rank0_kernel_plan(MPI_Comm comm, const TrainConfig& config, int ranks) {
  constexpr std::size_t kPixels = 28 * 28, kClasses = 10;
  const Mlp model(config.layer_sizes(kPixels, kClasses));
  const std::size_t batch = config.per_worker_batch(ranks);
  const std::vector<GemmShape> shapes = batch > 0 ? model.planned_gemms(batch) : model.evaluation_gemms();
  return adopt_rank0_kernel_plan(comm, shapes);
}

}  // namespace gradsync
