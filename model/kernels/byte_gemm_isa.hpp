#pragma once
// The byte kernels (model/kernels/byte_gemm.hpp) compiled per instruction set, one function per output count:
// byte_gemm.cpp picks the set the process runs on. Not for other callers.
#include <cstddef>
#include <cstdint>
#include <span>

namespace gradsync::byte_kernels {

using ForwardFn = void (*)(std::size_t n, std::size_t f, const float* w, const std::uint8_t* const* rows, float scale,
                           float* z, std::size_t ldz);
using GradientFn = void (*)(std::size_t n, std::size_t f, const float* delta, std::size_t ldd,
                            const std::uint8_t* const* rows, float scale, float* dw,
                            std::span<const std::uint8_t* const> upcoming);

// The kernels for `outputs` outputs (1 <= outputs <= kMaxByteGemmOutputs, unchecked), compiled for AVX-512 (F, BW,
// VL) or AVX2 + FMA: call them only where active_isa() is at least that set. Null where the build has no such
// set (not x86-64).
ForwardFn avx512_forward(std::size_t outputs);
GradientFn avx512_gradient(std::size_t outputs);
ForwardFn avx2_forward(std::size_t outputs);
GradientFn avx2_gradient(std::size_t outputs);

}  // namespace gradsync::byte_kernels
