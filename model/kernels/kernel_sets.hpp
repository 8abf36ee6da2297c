#pragma once
// Which kernel sets this process can run on any shape, and the BLIS context that runs one of them on a call.
#include <string>
#include <string_view>
#include <vector>

#include "model/kernels/blis_setup.hpp"

struct cntx_s;  // BLIS's context type (cntx_t), kept out of this header

namespace gradsync {

// True if this BLIS build hands out per-set contexts (it does when linked statically: the shared library
// hides bli_gks_lookup_id). Without them every plan is empty and all shapes run on the default kernels.
bool per_call_contexts_available();

// The context of kernel set `name` (e.g. "skx"), or null if this BLIS has no such set or no per-call contexts.
// Only sets that configure_blis found this CPU can run (BlisConfig::kernel_sets) are safe to call.
cntx_s* kernel_set_context(std::string_view name);

// Whether this process can run kernel set `set` on any shape: its default set (`blis.arch`) always, another set
// only by a per-call context, so only where those exist and configure_blis found the CPU runs it; "bytes" where the
// byte kernels have a vector form for the process's instruction set (byte_gemm_vectorized).
bool can_run_kernels(const BlisConfig& blis, std::string_view set);
// Every set can_run_kernels accepts here, the default set first, "bytes" last where it runs.
std::vector<std::string> runnable_kernels(const BlisConfig& blis);

}  // namespace gradsync
