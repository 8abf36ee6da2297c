#include "model/kernels/byte_gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cpu/isa_dispatch.hpp"
#include "model/dataset.hpp"
#include "model/kernels/byte_gemm_isa.hpp"

namespace gradsync {
namespace {

// The kernels are instantiated per output count: outside 1..kMaxByteGemmOutputs there is no kernel to call.
void check_outputs(std::size_t outputs) {
  if (outputs == 0 || outputs > kMaxByteGemmOutputs)
    throw std::invalid_argument(
        fmt::format("byte kernels: {} outputs, they compute 1..{}", outputs, kMaxByteGemmOutputs));
}

// The vectorized kernels for the process's instruction set; null on the baseline (the plain loops run).
byte_kernels::ForwardFn vector_forward(std::size_t outputs) {
#if defined(GRADSYNC_ISA_DISPATCH)
  switch (active_isa()) {
    case Isa::avx512: return byte_kernels::avx512_forward(outputs);
    case Isa::avx2: return byte_kernels::avx2_forward(outputs);
    case Isa::baseline: break;
  }
#endif
  (void)outputs;
  return nullptr;
}

byte_kernels::GradientFn vector_gradient(std::size_t outputs) {
#if defined(GRADSYNC_ISA_DISPATCH)
  switch (active_isa()) {
    case Isa::avx512: return byte_kernels::avx512_gradient(outputs);
    case Isa::avx2: return byte_kernels::avx2_gradient(outputs);
    case Isa::baseline: break;
  }
#endif
  (void)outputs;
  return nullptr;
}

}  // namespace

bool byte_gemm_vectorized() { return vector_forward(1) != nullptr; }

std::string_view byte_gemm_kernels() { return byte_gemm_vectorized() ? isa_name(active_isa()) : "plain"; }

bool byte_gemm_handles(const GemmShape& g) {
  return g.batch_operand && !g.transpose_a && g.m >= 1 && g.m <= kMaxByteGemmOutputs && g.n >= 1 && g.k >= 1;
}

void forward_from_bytes(std::size_t outputs, std::size_t n, std::size_t f, const float* w,
                        const std::uint8_t* const* rows, float scale, float* z, std::size_t ldz) {
  check_outputs(outputs);
  if (const auto kernel = vector_forward(outputs)) return kernel(n, f, w, rows, scale, z, ldz);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t c = 0; c < outputs; ++c) {
      float sum = 0;
      for (std::size_t k = 0; k < f; ++k) sum += w[c * f + k] * static_cast<float>(rows[j][k]);
      z[c * ldz + j] += scale * sum;
    }
}

void weight_gradient_from_bytes(std::size_t outputs, std::size_t n, std::size_t f, const float* delta, std::size_t ldd,
                                const std::uint8_t* const* rows, float scale, float* dw,
                                std::span<const std::uint8_t* const> upcoming) {
  check_outputs(outputs);
  if (const auto kernel = vector_gradient(outputs)) return kernel(n, f, delta, ldd, rows, scale, dw, upcoming);
  std::fill_n(dw, outputs * f, 0.0f);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t c = 0; c < outputs; ++c)
      for (std::size_t k = 0; k < f; ++k) dw[c * f + k] += delta[c * ldd + j] * static_cast<float>(rows[j][k]);
  for (std::size_t i = 0; i < outputs * f; ++i) dw[i] *= scale;
}

std::function<void()> byte_gemm_call(const GemmShape& g) {
  struct Operands {
    std::vector<std::uint8_t> bytes;
    std::vector<const std::uint8_t*> rows;
    std::vector<float> a, c;
  };
  // Forward: m outputs x n examples x k features; weight gradient: m outputs x n features x k examples.
  const std::size_t examples = g.transpose_b ? g.n : g.k, features = g.transpose_b ? g.k : g.n;
  auto ops = std::make_shared<Operands>();
  ops->bytes.resize(examples * features);
  std::uint32_t x = 12345;
  for (std::uint8_t& b : ops->bytes) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  for (std::size_t j = 0; j < examples; ++j) ops->rows.push_back(ops->bytes.data() + j * features);
  ops->a.assign(g.m * g.k, 0.01f);
  ops->c.assign(g.m * g.n, 0.0f);
  if (g.transpose_b)
    return [ops, g, features] {
      forward_from_bytes(g.m, g.n, features, ops->a.data(), ops->rows.data(), kPixelScale, ops->c.data(), g.n);
    };
  return [ops, g, examples] {
    weight_gradient_from_bytes(g.m, examples, g.n, ops->a.data(), examples, ops->rows.data(), kPixelScale, ops->c.data());
  };
}

}  // namespace gradsync
