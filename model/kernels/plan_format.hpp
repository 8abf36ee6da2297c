#pragma once
// Which BLIS kernel set computes each GEMM shape the model uses, chosen by measurement.
// The input layer's two products (GemmShape::batch_operand) have one more candidate, the byte kernels
// (model/byte_gemm.hpp), named kByteKernels ("bytes") in a plan.
//
// Debian's BLIS carries several kernel sets (skx, zen3, zen2, zen, haswell, ...) and no single one is fastest on
// every shape: AVX-512 kernels win the MLP's large products and lose the 10-class ones. BLIS's expert API takes
// a context (one set's micro-kernels and block sizes) per call, and its kernel structure (gks) holds a native
// context for every set the build contains, so each shape can run on its own set inside one process.
//
// Every rank of a data-parallel run must run the same set on the same shape, or a run's bits would depend on
// which process computed which shard: rank 0 measures, and one plan, agreed with what every rank can run, is
// installed everywhere (model/kernel_agreement.hpp, trainers/kernel_plan_mpi.hpp). Knows nothing about MPI.
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/gemm_shape.hpp"

struct cntx_s;  // BLIS's context type (cntx_t), kept out of this header

namespace gradsync {

struct PlannedGemm {
  GemmShape shape;
  std::string kernels;                                  // the set that runs it, e.g. "skx", or "bytes"
  std::vector<std::pair<std::string, double>> seconds;  // seconds per call of each set timed (empty if unknown)
  double seconds_of(std::string_view set) const;        // 0 if `set` was not timed
};

struct KernelPlan {
  std::vector<PlannedGemm> gemms;  // shapes not listed run on `fallback`
  std::string source;              // why this plan: "measured", "cache FILE", "rank 0's", "BLIS_ARCH_TYPE ..."
  // The set for every shape not listed; empty: the process's default kernels (BlisConfig::arch). Ranks agree on
  // it (model/kernel_agreement.hpp), because their default kernels need not be the same.
  std::string fallback;

  const PlannedGemm* find(const GemmShape& shape) const;  // null if the shape is not planned
  // One line per shape: "nn 128 32 784 skx skx=1.1e-05 zen3=2.0e-05", and "default zen3" for a fallback;
  // from_text(to_text()) gives the same gemms and fallback.
  std::string to_text() const;
  // Nothing if any line is malformed (a damaged cache file or message is refused whole, never half used).
  static std::optional<KernelPlan> from_text(std::string_view text);
  // One line for run headers: each planned shape, its set and its speed-up over the set the other shapes run
  // (`fallback`, or `default_set` when it is empty) where timed.
  std::string summary(std::string_view default_set) const;
};

// True if this BLIS build hands out per-set contexts (it does when linked statically: the shared library
// hides bli_gks_lookup_id). Without them every plan is empty and all shapes run on the default kernels.
bool per_call_contexts_available();

// The context of kernel set `name` (e.g. "skx"), or null if this BLIS has no such set or no per-call contexts.
// Only sets that configure_blis found this CPU can run (BlisConfig::kernel_sets) are safe to call.
cntx_s* kernel_set_context(std::string_view name);

// Times every set in `sets` on every shape, and the byte kernels (where vectorized) on the shapes they handle
// (byte_gemm_handles), interleaved round by round so that a load change hits all candidates alike, each set
// through gemm_in_row_blocks as the model calls it; the fastest (least time over the rounds) wins, except that
// `preferred` (BLIS's default set) keeps a shape unless another candidate beats it by more than kPlanMargin:
// the AVX2 sets share their small-matrix kernels, so their differences are timing noise, and a coin toss between
// equals would change a run's bits from one machine's cache to the next for nothing (an interleaved A/B of such a
// toss showed no gain). The input layer's products are then chosen together (choose_batch_products_together).
// `sets` must be runnable here (BlisConfig::kernel_sets); `rounds` >= 1.
inline constexpr double kPlanMargin = 0.10;
inline constexpr int kPlanRounds = 9;  // timing samples of each candidate (and of a batch's widening)
KernelPlan measure_kernel_plan(std::span<const GemmShape> shapes, std::span<const std::string> sets,
                               std::string_view preferred = {}, int rounds = kPlanRounds);

// The byte kernels read a batch where the dataset holds its bytes; a BLIS product reads float rows that the gather
// must write first, once per batch however many products read them. Timed per shape that cost is invisible, so
// the products of one batch (those with batch_operand and a timing of the byte kernels, grouped by outputs,
// examples and features: the input layer's forward product and weight gradient) are chosen together: of the byte
// kernels and each product's pick among the BLIS sets (`preferred` within kPlanMargin, as above), the assignment
// with the least time, plus `widen_seconds(examples, features)` wherever a product reads floats; no margin between
// the byte kernels and BLIS here, as the widening is a real cost, not timing noise. Changes only the `kernels` of
// those products; measure_kernel_plan ends with it, and make_kernel_plan applies it again to the cached and newly
// measured shapes together.
void choose_batch_products_together(KernelPlan& plan, std::string_view preferred,
                                    const std::function<double(std::size_t, std::size_t)>& widen_seconds);

// The plan for `shapes` on this machine. Empty (every shape on BLIS's default kernels) if the user set
// BLIS_ARCH_TYPE, fewer than two sets run here, or per-call contexts are unavailable. Otherwise read from the
// cache file (kernel_cache_file) when it holds every shape, else measured and written back. The cache is keyed by
// the plan format's version, CPU model, BLIS version, the runnable sets, the thread count and the byte kernels'
// build; $GRADSYNC_KERNEL_CACHE names its directory ("off": always measure, never write).
KernelPlan make_kernel_plan(std::span<const GemmShape> shapes, const BlisConfig& blis);

std::string kernel_cache_key(const BlisConfig& blis);
std::optional<std::filesystem::path> kernel_cache_file(const BlisConfig& blis);  // nothing when caching is off

// Whether this process can run kernel set `set` on any shape: its default set (`blis.arch`) always, another set
// only by a per-call context, so only where those exist and configure_blis found the CPU runs it; "bytes" where the
// byte kernels have their AVX-512 form.
bool can_run_kernels(const BlisConfig& blis, std::string_view set);
// Every set can_run_kernels accepts here, the default set first, "bytes" last where it runs.
std::vector<std::string> runnable_kernels(const BlisConfig& blis);

// Makes `plan` the one every GEMM of this process follows (Mlp looks its shapes up here). Throws
// std::invalid_argument, installing nothing, if the plan names (for a shape or as its fallback) a set that
// can_run_kernels refuses, or the byte kernels for a shape they do not handle. `blis` is this process's
// configure_blis result. Not thread-safe: install before computing.
void install_kernel_plan(const KernelPlan& plan, const BlisConfig& blis);
const KernelPlan& installed_kernel_plan();
// The context installed for `shape`: its set's if the installed plan lists it, else the fallback's; null means
// BLIS's default kernels (no fallback, or no per-call contexts in this BLIS) or the byte kernels.
cntx_s* planned_context(const GemmShape& shape);
// True if the installed plan gives `shape` to the byte kernels.
bool planned_on_bytes(const GemmShape& shape);

}  // namespace gradsync
