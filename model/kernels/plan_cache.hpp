#pragma once
// The kernel plan for a run: from the cache file that earlier runs on this machine wrote, or measured and written
// there.
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/gemm_shape.hpp"
#include "model/kernels/plan_format.hpp"

namespace gradsync {

// The plan for `shapes` on this machine. Empty (every shape on BLIS's default kernels) if the user set
// BLIS_ARCH_TYPE, fewer than two sets run here, or per-call contexts are unavailable. Otherwise read from the
// cache file (kernel_cache_file) when it holds every shape, else measured (measure_kernel_plan) and written back.
// The cache is keyed by the plan format's version, CPU model, BLIS version, the runnable sets, the thread count and
// the byte kernels' build; $GRADSYNC_KERNEL_CACHE names its directory ("off": always measure, never write).
// `blis` is this process's configure_blis result.
KernelPlan make_kernel_plan(std::span<const GemmShape> shapes, const BlisConfig& blis);

// The cache file's key line (without its "# "): two processes read each other's plans only if their keys match.
std::string kernel_cache_key(const BlisConfig& blis);
// $GRADSYNC_KERNEL_CACHE, else $XDG_CACHE_HOME/gradsync, else ~/.cache/gradsync, and a file named by the key's
// hash; nothing when caching is off or no directory is known.
std::optional<std::filesystem::path> kernel_cache_file(const BlisConfig& blis);

}  // namespace gradsync
