#pragma once
// Row-major GEMM on BLIS's typed API: C = alpha * op(A) * op(B) + beta * C, op(A) m x k, op(B) k x n.
// `lda`, `ldb`, `ldc` are the row strides of the matrices as stored (A is k x m in memory when transposed).
#include <blis.h>

#include <cstddef>

namespace gradsync {

enum class Op { N, T };

inline void gemm(Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
                 const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  bli_sgemm(ta == Op::T ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, tb == Op::T ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
            static_cast<dim_t>(m), static_cast<dim_t>(n), static_cast<dim_t>(k), &alpha, const_cast<float*>(a),
            static_cast<inc_t>(lda), 1, const_cast<float*>(b), static_cast<inc_t>(ldb), 1, &beta, c,
            static_cast<inc_t>(ldc), 1);
}

}  // namespace gradsync
