#pragma once
// Row-major GEMM on BLIS's expert API: C = alpha * op(A) * op(B) + beta * C, op(A) m x k, op(B) k x n.
// `lda`, `ldb`, `ldc` are the row strides of the matrices as stored (A is k x m in memory when transposed).
// `cntx` is the BLIS context (one kernel set's micro-kernels and block sizes) to run with; null means the one BLIS
// chose for the process. The context is read-only for BLIS, so one context may serve any number of calls.
#include <blis.h>

#include <algorithm>
#include <cstddef>

#include "model/kernels/gemm_shape.hpp"

namespace gradsync {

enum class Op { N, T };

inline void gemm(Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
                 const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc, cntx_t* cntx = nullptr) {
  bli_sgemm_ex(ta == Op::T ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb == Op::T ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
               static_cast<dim_t>(m), static_cast<dim_t>(n), static_cast<dim_t>(k), &alpha, const_cast<float*>(a),
               static_cast<inc_t>(lda), 1, const_cast<float*>(b), static_cast<inc_t>(ldb), 1, &beta, c,
               static_cast<inc_t>(ldc), 1, cntx, nullptr);
}

// A GEMM cut into blocks of C's rows with `between()` called between two blocks: a long GEMM would otherwise
// leave communication unattended for its whole length (Open MPI's TCP transport moves data only inside MPI
// calls). The cut depends on the shape alone, never on who listens, so an observed pass computes the same bits;
// the kernel plan times GEMMs through this same function, so it measures the calls the model really makes.
inline constexpr double kFlopsBetweenProgress = 2e8;

// The rows of C in one block of an m x n x k product: whole register blocks of the micro-kernels, about
// kFlopsBetweenProgress of work.
inline std::size_t progress_block_rows(std::size_t n, std::size_t k) {
  constexpr std::size_t kRowAlign = 16;
  const double row_flops = 2.0 * static_cast<double>(n) * static_cast<double>(k);
  const auto rows = static_cast<std::size_t>(kFlopsBetweenProgress / std::max(row_flops, 1.0));
  return std::max(kRowAlign, rows / kRowAlign * kRowAlign);
}

template <class Between>
void gemm_in_row_blocks(Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                        std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc,
                        cntx_t* cntx, Between&& between) {
  const std::size_t rows = progress_block_rows(n, k);
  for (std::size_t i = 0; i < m; i += rows) {
    const std::size_t r = std::min(rows, m - i);
    gemm(ta, tb, r, n, k, alpha, ta == Op::N ? a + i * lda : a + i, lda, b, ldb, beta, c + i * ldc, ldc, cntx);
    if (i + r < m) between();
  }
}

// gemm_in_row_blocks' blocks (the same bits: each block is its own product) from the last to the first, with
// `done(first_row, rows)` called after each: a caller that hands C's rows on as they become final (a weight
// gradient's buckets, model/mlp.hpp) gets them from C's end, the order a gradient is reported in.
template <class Done>
void gemm_in_row_blocks_from_end(Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                                 std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc,
                                 cntx_t* cntx, Done&& done) {
  if (m == 0) return;
  const std::size_t rows = progress_block_rows(n, k);
  for (std::size_t i = (m - 1) / rows * rows;; i -= rows) {
    const std::size_t r = std::min(rows, m - i);
    gemm(ta, tb, r, n, k, alpha, ta == Op::N ? a + i * lda : a + i, lda, b, ldb, beta, c + i * ldc, ldc, cntx);
    done(i, r);
    if (i == 0) return;
  }
}

}  // namespace gradsync
