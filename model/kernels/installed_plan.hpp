#pragma once
// The kernel plan this process follows: every GEMM of the model looks its shape up here.
#include <string>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/gemm_shape.hpp"
#include "model/kernels/plan_format.hpp"

struct cntx_s;  // BLIS's context type (cntx_t), kept out of this header

namespace gradsync {

// Makes `plan` the one every GEMM of this process follows (Mlp looks its shapes up here). Throws
// std::invalid_argument, installing nothing, if the plan names (for a shape or as its fallback) a set that
// can_run_kernels refuses, or the byte kernels for a shape they do not handle. `blis` is this process's
// configure_blis result. Not thread-safe: install before computing.
void install_kernel_plan(const KernelPlan& plan, const BlisConfig& blis);
// The plan last installed (an empty one, with an empty source, before any).
const KernelPlan& installed_kernel_plan();
// The context installed for `shape`: its set's if the installed plan lists it, else the fallback's; null means
// BLIS's default kernels (no fallback, or no per-call contexts in this BLIS) or the byte kernels.
cntx_s* planned_context(const GemmShape& shape);
// True if the installed plan gives `shape` to the byte kernels.
bool planned_on_bytes(const GemmShape& shape);

// For run headers: blis.summary(), and once a plan is installed a second line naming each GEMM shape's kernels.
std::string kernels_summary(const BlisConfig& blis);

}  // namespace gradsync
