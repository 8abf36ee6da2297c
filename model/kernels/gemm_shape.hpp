#pragma once
// The shape of one matrix product, without BLIS: op(A) is m x k, op(B) is k x n (row-major, C is m x n).
#include <cstddef>

namespace gradsync {

struct GemmShape {
  bool transpose_a = false, transpose_b = false;
  std::size_t m = 0, n = 0, k = 0;
  // op(B) is the input batch (transposed in the forward product, as stored in the weight gradient), which also
  // exists as the dataset's bytes: such a shape may run on the byte kernels (model/kernels/byte_gemm.hpp).
  bool batch_operand = false;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  bool operator==(const GemmShape&) const = default;
};

}  // namespace gradsync
