#include "compression/orthonormalize.hpp"

#include <cmath>

namespace gradsync {
namespace {

double column_dot(const float* p, std::size_t rows, std::size_t cols, std::size_t a, std::size_t b) {
  double d = 0;
  for (std::size_t i = 0; i < rows; ++i) d += static_cast<double>(p[i * cols + a]) * p[i * cols + b];
  return d;
}

// Column j minus its projection onto the earlier columns (orthonormal, or zero).
void remove_projections(float* p, std::size_t rows, std::size_t cols, std::size_t j) {
  for (std::size_t c = 0; c < j; ++c) {
    const auto d = static_cast<float>(column_dot(p, rows, cols, c, j));
    if (d == 0.0f) continue;
    for (std::size_t i = 0; i < rows; ++i) p[i * cols + j] -= d * p[i * cols + c];
  }
}

}  // namespace

void orthonormalize_columns(float* p, std::size_t rows, std::size_t cols) {
  for (std::size_t j = 0; j < cols; ++j) {
    const double before = std::sqrt(column_dot(p, rows, cols, j, j));
    remove_projections(p, rows, cols, j);
    remove_projections(p, rows, cols, j);
    const double after = std::sqrt(column_dot(p, rows, cols, j, j));
    const float scale = after > kDependentColumn * before ? static_cast<float>(1.0 / after) : 0.0f;
    for (std::size_t i = 0; i < rows; ++i) p[i * cols + j] *= scale;
  }
}

}  // namespace gradsync
