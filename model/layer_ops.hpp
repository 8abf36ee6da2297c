#pragma once
// The loops and observed products the models' layers share (model/mlp.cpp, model/cnn.cpp). Each loop runs compiled
// for the process's instruction set (cpu/isa_dispatch.hpp), dispatching once per call: call them on whole layers,
// not per element. Matrices are row-major, activations features x batch (a row per feature or channel).
#include <cstddef>
#include <cstdint>

#include "model/kernels/gemm.hpp"
#include "model/model.hpp"

namespace gradsync {

// z[i] = max(z[i], 0) for i < n.
void relu_inplace(float* z, std::size_t n);

// delta[i] = 0 where the layer's stored activation a[i] is 0: relu'(z) > 0 exactly where relu(z) > 0.
void relu_backward(const float* a, float* delta, std::size_t n);

// Softmax down each column of z (classes x batch), in place. With `delta`, also writes the output layer's
// dLoss/dZ = (p - onehot(y)) * inv_n there (classes x batch; needs y). Returns -sum log p[y] over the columns (0 if
// y is null).
double softmax_columns(float* z, std::size_t classes, std::size_t batch, const std::uint8_t* y, float* delta,
                       float inv_n);

// db[o] = the sum of delta's row o (outputs x n), each row in 16 interleaved partial sums.
void bias_gradient(const float* delta, std::size_t outputs, std::size_t n, float* db);

// A BLIS GEMM, C = alpha op(A) op(B) + beta C, on the kernels the installed plan names for its shape (batch_operand
// as in GemmShape), cut into row blocks (gemm_in_row_blocks) with the observer told between blocks.
void gemm_observed(PassObserver* observer, bool batch_operand, Op ta, Op tb, std::size_t m, std::size_t n, std::size_t k,
                   float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
                   std::size_t ldc);

// dW (out x in, at `dw_offset` in the gradient buffer) = delta (out x n) . op(B), as gemm_observed would compute it,
// with each row block reported ready as it becomes final (the last block first) and a progress point after every
// block but the last: a bucket of dW's rows ships while the rows above it compute.
void weight_gradient_observed(PassObserver* observer, bool batch_operand, Op tb, std::size_t out, std::size_t in,
                              std::size_t n, const float* delta, const float* b, std::size_t ldb, float* dw,
                              std::size_t dw_offset);

}  // namespace gradsync
