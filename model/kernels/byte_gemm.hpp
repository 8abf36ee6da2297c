#pragma once
// The input layer's two products computed straight from the dataset's bytes, for layers with few outputs.
//
// BLIS needs the batch as floats: the gather converts 784 random bytes per example into a float row that the GEMMs
// then pack again, and with ten outputs (softmax regression) BLIS runs these skinny products well below the core's
// rate. These kernels read each example's bytes where the dataset holds them and widen them in registers:
//   forward          Z (outputs x n) += scale * W (outputs x f) . X^T   (two examples at a time, W in registers)
//   weight gradient  dW (outputs x f) = scale * delta (outputs x n) . X  (32 features at a time over the batch)
// where row j of X is the f bytes at rows[j] and scale turns bytes into pixels (kPixelScale). They compute the same
// products as BLIS on the float rows up to rounding: the scale is applied to each sum instead of to each pixel.
// Whether a shape runs here or on a BLIS kernel set is the kernel plan's measured choice (kernel name kByteKernels,
// shapes with GemmShape::batch_operand).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "model/kernels/gemm_shape.hpp"

namespace gradsync {

inline constexpr std::string_view kByteKernels = "bytes";
// Each output is one accumulator register per example (forward) or per vector of features (gradient): AVX-512
// keeps 2 x 12 of its 32 vector registers, AVX2 12 of its 16, leaving room for the operands.
inline constexpr std::size_t kMaxByteGemmOutputs = 12;

// True if the process runs an instruction set the kernels are written for (AVX-512 or AVX2 + FMA: cpu/isa.hpp).
// Otherwise a plain loop computes the same products (correct, slow, and other bits than the vector kernels'): a
// plan neither times nor installs it.
bool byte_gemm_vectorized();
// Which kernels run: "avx512", "avx2" or "plain". Each computes its own bits (the sums' order differs), so a kernel
// plan measured with one is not reused with another (model/kernels/plan_cache.hpp).
std::string_view byte_gemm_kernels();

// True if `g` is one of the input layer's products these kernels compute: g.batch_operand, A untransposed,
// 1 <= m <= kMaxByteGemmOutputs and n, k >= 1 (the forward product is transposed-B, m x n x k = outputs x
// examples x features; the weight gradient is untransposed, outputs x features x examples).
bool byte_gemm_handles(const GemmShape& g);

// z (outputs x n, row stride ldz) += scale * w . X^T. w is outputs x f row-major; rows[0..n) each point to f
// readable bytes. Throws std::invalid_argument unless 1 <= outputs <= kMaxByteGemmOutputs. Allocates nothing.
void forward_from_bytes(std::size_t outputs, std::size_t n, std::size_t f, const float* w,
                        const std::uint8_t* const* rows, float scale, float* z, std::size_t ldz);

// dw (outputs x f, row-major, overwritten) = scale * delta . X, delta outputs x n with row stride ldd. rows and
// outputs as for forward_from_bytes. `upcoming` (may be empty) are the next batch's rows (up to n of them are
// used), each with f readable bytes: their bytes are requested from memory while this product computes, so that
// the next forward product does not wait on random rows. Allocates nothing.
void weight_gradient_from_bytes(std::size_t outputs, std::size_t n, std::size_t f, const float* delta, std::size_t ldd,
                                const std::uint8_t* const* rows, float scale, float* dw,
                                std::span<const std::uint8_t* const> upcoming = {});

// For timing: a callable that runs `g` once on these kernels over its own synthetic batch and operands, which stay
// in cache from call to call (the bound's convention, as for the BLIS shapes). Requires byte_gemm_handles(g).
std::function<void()> byte_gemm_call(const GemmShape& g);

}  // namespace gradsync
