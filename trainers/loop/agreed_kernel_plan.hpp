#pragma once
// One kernel plan (model/kernels/plan_format.hpp) on every rank: rank 0 learns what each rank can run, decides
// (model/kernels/agreement.hpp) and sends the plan; every rank installs exactly that. Here in trainers/, over Comm,
// so that model/ stays free of MPI.
#include <functional>
#include <span>
#include <stdexcept>

#include "collectives/comm.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/kernels/plan_format.hpp"
#include "trainers/config/train_config.hpp"

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
// kernels_summary() names it from then on. Throws KernelPlanError on every rank where no plan can be agreed
// (nothing installed anywhere), or where some rank could not install the agreed one (a bug: the others may have
// installed it, and the caller must stop); a failed MPI call throws MpiError naming it.
KernelPlan install_agreed_kernel_plan(const Comm& comm, std::span<const GemmShape> shapes,
                                      const BlisConfig& blis = configured_blis(),
                                      const KernelPlanMaker& make = make_kernel_plan);

// The same for a training run of `config` on comm.size() processes of MNIST-sized data (28 x 28 pixels, 10
// classes): its training and evaluation shapes. Data of another size runs on the plan's fallback set.
KernelPlan install_agreed_kernel_plan(const Comm& comm, const TrainConfig& config);

}  // namespace gradsync
