#pragma once
// Orthonormal columns for PowerSGD's P (compression/powersgd.cpp).
#include <cstddef>

namespace gradsync {

// A column whose norm, once its projection onto the earlier columns is removed, is at most this fraction of its own
// norm before is taken as dependent on them and set to zero: what is left of it is rounding noise (float32 leaves
// about sqrt(rows) * 2^-24 of the norm), and normalizing noise would add a direction that is not orthogonal to the
// others. Relative to the column itself, not to the largest one: with a warm-started Q the columns' norms spread
// like the squared singular values, and a small but independent direction must be kept.
inline constexpr double kDependentColumn = 1e-4;

// Makes the `cols` columns of the `rows` x `cols` row-major matrix `p` (row stride `cols`) orthonormal in place, by
// modified Gram-Schmidt run twice per column ("twice is enough": one pass loses orthogonality when columns are
// nearly dependent), with dot products and norms accumulated in double. Columns found dependent (kDependentColumn),
// zero columns included, become zero; the nonzero columns then span the input's column space. Local;
// the same input gives the same bits on every rank.
void orthonormalize_columns(float* p, std::size_t rows, std::size_t cols);

}  // namespace gradsync
