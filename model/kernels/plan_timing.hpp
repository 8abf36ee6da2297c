#pragma once
// Choosing a kernel plan by timing the candidates on this machine.
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "model/kernels/gemm_shape.hpp"
#include "model/kernels/plan_format.hpp"

namespace gradsync {

// Times every set in `sets` on every shape, and the byte kernels (where vectorized) on the shapes they handle
// (byte_gemm_handles), interleaved round by round so that a load change hits all candidates alike, each set
// through gemm_in_row_blocks as the model calls it; the fastest (least time over the rounds) wins, except that
// `preferred` (BLIS's default set) keeps a shape unless another candidate beats it by more than kPlanMargin:
// the AVX2 sets share their small-matrix kernels, so their differences are timing noise, and a coin toss between
// equals would change a run's bits from one machine's cache to the next for nothing (an interleaved A/B of such a
// toss showed no gain). The input layer's products are then chosen together (choose_batch_products_together).
// `sets` must be runnable here (BlisConfig::kernel_sets, else std::invalid_argument); `rounds` >= 1.
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

// Seconds to gather and widen `examples` random rows of `features` bytes into floats (widen_row, as the gather does),
// the rows out of cache as a step's are (cold_rows.hpp): the least over `rounds` (>= 1) samples of about half a
// millisecond. The widen_seconds of the functions above.
double widen_batch_seconds(std::size_t examples, std::size_t features, int rounds);

}  // namespace gradsync
