#include "model/kernels/installed_plan.hpp"

#include <blis.h>
#include <fmt/format.h>

#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/kernel_sets.hpp"

namespace gradsync {
namespace {

struct InstalledGemm {
  GemmShape shape;
  cntx_t* cntx = nullptr;  // the BLIS set's context; null for the byte kernels
  bool bytes = false;
};
struct Installed {
  KernelPlan plan;
  std::vector<InstalledGemm> gemms;
  cntx_t* fallback = nullptr;  // the context for shapes the plan does not list; null: BLIS's default kernels
};
Installed& installed() {
  static Installed state;
  return state;
}

// The context that runs kernel set `set` (for `what`, in errors) in this process. Throws std::invalid_argument if
// it cannot run the set.
cntx_t* context_of(const BlisConfig& blis, std::string_view what, const std::string& set) {
  if (!can_run_kernels(blis, set))
    throw std::invalid_argument(fmt::format("kernel plan: {} on {}, which this process cannot run (it runs: {})", what,
                                            set, fmt::join(runnable_kernels(blis), ", ")));
  // Without per-call contexts only the process's own set runs, and a null context is it.
  if (!per_call_contexts_available()) return nullptr;
  cntx_t* cntx = kernel_set_context(set);
  if (!cntx) throw std::invalid_argument(fmt::format("kernel plan: this BLIS has no context for {}", set));
  return cntx;
}

// How `g` runs here: its set's context, or the byte kernels. Throws std::invalid_argument if it cannot.
InstalledGemm installed_gemm(const BlisConfig& blis, const PlannedGemm& g) {
  if (g.kernels != kByteKernels) return {g.shape, context_of(blis, gemm_shape_text(g.shape), g.kernels), false};
  if (!byte_gemm_handles(g.shape))
    throw std::invalid_argument(fmt::format("kernel plan: the byte kernels cannot compute {}", gemm_shape_text(g.shape)));
  if (!can_run_kernels(blis, kByteKernels))
    throw std::invalid_argument(fmt::format("kernel plan: {} on the byte kernels, which this build has without AVX-512",
                                            gemm_shape_text(g.shape)));
  return {g.shape, nullptr, true};
}

}  // namespace

void install_kernel_plan(const KernelPlan& plan, const BlisConfig& blis) {
  std::vector<InstalledGemm> gemms;
  for (const PlannedGemm& g : plan.gemms) gemms.push_back(installed_gemm(blis, g));
  // The process's own set as the fallback is what a null context runs: the path of a plan without one.
  cntx_t* fallback = plan.fallback.empty() || plan.fallback == blis.arch
                         ? nullptr
                         : context_of(blis, "every other shape", plan.fallback);
  installed() = {plan, std::move(gemms), fallback};
}

const KernelPlan& installed_kernel_plan() { return installed().plan; }

cntx_s* planned_context(const GemmShape& shape) {
  for (const InstalledGemm& g : installed().gemms)
    if (g.shape == shape) return g.cntx;
  return installed().fallback;
}

bool planned_on_bytes(const GemmShape& shape) {
  for (const InstalledGemm& g : installed().gemms)
    if (g.shape == shape) return g.bytes;
  return false;
}

std::string kernels_summary(const BlisConfig& blis) {
  const KernelPlan& plan = installed_kernel_plan();
  return plan.source.empty() ? blis.summary() : blis.summary() + "\n" + plan.summary(blis.arch);
}

}  // namespace gradsync
