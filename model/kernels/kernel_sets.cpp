#include "model/kernels/kernel_sets.hpp"

#include <blis.h>

#include <algorithm>

#include "model/kernels/blis_arch.hpp"
#include "model/kernels/byte_gemm.hpp"

namespace gradsync {

bool per_call_contexts_available() {
#if defined(GRADSYNC_BLIS_PER_CALL_CONTEXTS)
  return true;
#else
  return false;
#endif
}

cntx_s* kernel_set_context(std::string_view name) {
#if defined(GRADSYNC_BLIS_PER_CALL_CONTEXTS)
  const auto index = blis_arch_index(name);
  if (!index) return nullptr;
  bli_init();
  // The gks registers and initializes a native context for every set the build contains, not only for the
  // set BLIS runs by default; the array is null for sets this build lacks.
  cntx_t** contexts = bli_gks_lookup_id(static_cast<arch_t>(*index));
  return contexts ? contexts[BLIS_NAT] : nullptr;
#else
  (void)name;
  return nullptr;
#endif
}

bool can_run_kernels(const BlisConfig& blis, std::string_view set) {
  // A rank with the plain loop would compute other bits than the ranks with vector byte kernels (and ranks on
  // different instruction sets list theirs apart: RankKernels::of).
  if (set == kByteKernels) return byte_gemm_vectorized();
  if (set == blis.arch) return true;
  return per_call_contexts_available() &&
         std::find(blis.kernel_sets.begin(), blis.kernel_sets.end(), set) != blis.kernel_sets.end();
}

std::vector<std::string> runnable_kernels(const BlisConfig& blis) {
  std::vector<std::string> runs{blis.arch};
  for (const std::string& set : blis.kernel_sets)
    if (set != blis.arch && can_run_kernels(blis, set)) runs.push_back(set);
  if (can_run_kernels(blis, kByteKernels)) runs.emplace_back(kByteKernels);
  return runs;
}

}  // namespace gradsync
