#include "model/layer_ops.hpp"

#include <algorithm>
#include <type_traits>

#include "cpu/isa_dispatch.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/vector_exp.hpp"
#include "model/vector_log.hpp"

namespace gradsync {
namespace {

// The loops outside the GEMMs run compiled for the process's instruction set (cpu/isa_dispatch.hpp): each entry
// point below dispatches once, and the helpers it calls are inlined into it.

// The sum of x[0..n) in kLanes interleaved partial sums: one running sum is a chain of dependent additions (the
// compiler may not reorder float sums), the partial sums are one vector addition per kLanes elements.
__attribute__((always_inline)) inline float row_sum(const float* x, std::size_t n) {
  constexpr std::size_t kLanes = 16;
  float partial[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) partial[k] += x[j + k];
  float sum = 0;
  for (float p : partial) sum += p;
  for (; j < n; ++j) sum += x[j];
  return sum;
}

// softmax_columns' loop, kBlock columns at a time so that a block's running maxima and sums stay in registers while
// its classes are swept (each sweep over contiguous memory). The loss is summed in kBlock lanes as row_sum does.
__attribute__((always_inline)) inline double softmax_loop(float* z, std::size_t classes, std::size_t batch,
                                                          const std::uint8_t* y, float* delta, float inv_n) {
  constexpr std::size_t kBlock = 16;
  float loss_lanes[kBlock] = {};
  const auto block = [&](std::size_t j0, auto width) GRADSYNC_INLINE_LOOP {
    float m[kBlock], s[kBlock];
    for (std::size_t k = 0; k < width; ++k) m[k] = z[j0 + k];
    for (std::size_t c = 1; c < classes; ++c) {
      const float* row = z + c * batch + j0;
      // Not std::max: GCC leaves its select between references to the two floats a branch, not a vector max.
      for (std::size_t k = 0; k < width; ++k) m[k] = row[k] > m[k] ? row[k] : m[k];
    }
    for (std::size_t k = 0; k < width; ++k) s[k] = 0.0f;
    for (std::size_t c = 0; c < classes; ++c) {
      float* row = z + c * batch + j0;
      for (std::size_t k = 0; k < width; ++k) s[k] += row[k] = exp_nonpositive(row[k] - m[k]);
    }
    for (std::size_t k = 0; k < width; ++k) s[k] = 1.0f / s[k];
    for (std::size_t c = 0; c < classes; ++c) {
      float* row = z + c * batch + j0;
      for (std::size_t k = 0; k < width; ++k) row[k] *= s[k];
      if (delta)
        for (std::size_t k = 0; k < width; ++k) delta[c * batch + j0 + k] = row[k] * inv_n;
    }
    if (!y) return;
    float label_p[kBlock];
    for (std::size_t k = 0; k < width; ++k) {
      const std::size_t at = y[j0 + k] * batch + j0 + k;
      label_p[k] = std::max(z[at], 1e-30f);
      if (delta) delta[at] -= inv_n;
    }
    for (std::size_t k = 0; k < width; ++k) loss_lanes[k] -= log_positive(label_p[k]);
  };
  std::size_t j0 = 0;
  for (; j0 + kBlock <= batch; j0 += kBlock) block(j0, std::integral_constant<std::size_t, kBlock>{});
  if (j0 < batch) block(j0, batch - j0);
  double loss = 0;
  for (float lane : loss_lanes) loss += lane;
  return loss;
}

}  // namespace

void relu_inplace(float* z, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    for (std::size_t i = 0; i < n; ++i) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
  });
}

void relu_backward(const float* a, float* delta, std::size_t n) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const float* __restrict in = a;
    float* __restrict d = delta;
    for (std::size_t i = 0; i < n; ++i) d[i] = in[i] > 0.0f ? d[i] : 0.0f;
  });
}

double softmax_columns(float* z, std::size_t classes, std::size_t batch, const std::uint8_t* y, float* delta,
                       float inv_n) {
  return on_active_isa([=]() GRADSYNC_INLINE_LOOP { return softmax_loop(z, classes, batch, y, delta, inv_n); });
}

void bias_gradient(const float* delta, std::size_t outputs, std::size_t n, float* db) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    for (std::size_t o = 0; o < outputs; ++o) db[o] = row_sum(delta + o * n, n);
  });
}

void gemm_observed(PassObserver* observer, bool batch_operand, Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k,
                   float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                   std::size_t ldc) {
  cntx_t* cntx = planned_context(GemmShape{ta == Op::T, tb == Op::T, m, n, k, batch_operand});
  gemm_in_row_blocks(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cntx, [observer] {
    if (observer) observer->between_kernels();
  });
}

void weight_gradient_observed(PassObserver* observer, bool batch_operand, Op tb, std::size_t out, std::size_t in,
                              std::size_t n, const float* delta, const float* b, std::size_t ldb, float* dw,
                              std::size_t dw_offset) {
  cntx_t* cntx = planned_context(GemmShape{false, tb == Op::T, out, in, n, batch_operand});
  gemm_in_row_blocks_from_end(Op::N, tb, out, in, n, 1.0f, delta, n, b, ldb, 0.0f, dw, in, cntx,
                              [=](std::size_t first, std::size_t rows) {
                                if (!observer) return;
                                observer->gradient_ready(dw_offset + first * in, dw_offset + (first + rows) * in);
                                if (first > 0) observer->between_kernels();
                              });
}

}  // namespace gradsync
