#pragma once
// A kernel plan: which BLIS kernel set computes each GEMM shape the model uses, chosen by measurement
// (model/kernels/plan_timing.hpp), and its text form (the cache file's body, the message rank 0 sends).
// The input layer's two products (GemmShape::batch_operand) have one more candidate, the byte kernels
// (model/kernels/byte_gemm.hpp), named kByteKernels ("bytes") in a plan.
//
// Debian's BLIS carries several kernel sets (skx, zen3, zen2, zen, haswell, ...) and no single one is fastest on
// every shape: AVX-512 kernels win the MLP's large products and lose the 10-class ones. BLIS's expert API takes
// a context (one set's micro-kernels and block sizes) per call, and its kernel structure (gks) holds a native
// context for every set the build contains, so each shape can run on its own set inside one process
// (model/kernels/kernel_sets.hpp).
//
// Every rank of a data-parallel run must run the same set on the same shape, or a run's bits would depend on
// which process computed which shard: rank 0 measures, and one plan, agreed with what every rank can run, is
// installed everywhere (model/kernels/agreement.hpp, model/kernels/installed_plan.hpp,
// trainers/loop/agreed_kernel_plan.hpp). Knows nothing about MPI.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/kernels/gemm_shape.hpp"

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
  // it (model/kernels/agreement.hpp), because their default kernels need not be the same.
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

// A shape as a plan's line names it: "nt 10 32 784"; a shape whose B operand is the input batch is marked "ntb".
std::string gemm_shape_text(const GemmShape& g);

}  // namespace gradsync
