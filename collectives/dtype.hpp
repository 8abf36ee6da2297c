#pragma once
// The element types the collectives reduce, and the vectorizable sum kernel they share.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gradsync {

enum class Dtype : std::uint8_t { f32, f64, i32, i64 };

template <class T>
constexpr Dtype dtype_of();
template <>
constexpr Dtype dtype_of<float>() {
  return Dtype::f32;
}
template <>
constexpr Dtype dtype_of<double>() {
  return Dtype::f64;
}
template <>
constexpr Dtype dtype_of<std::int32_t>() {
  return Dtype::i32;
}
template <>
constexpr Dtype dtype_of<std::int64_t>() {
  return Dtype::i64;
}

// Bytes per element, the matching MPI datatype, and the name used in messages ("float", "int64", ...).
std::size_t dtype_size(Dtype t);
MPI_Datatype mpi_type(Dtype t);
std::string_view dtype_name(Dtype t);

// dst[i] += src[i] for i < count; the buffers must not overlap. Vectorized for the instruction set the process
// runs on (cpu/isa_dispatch.hpp); the sums are the same on every set (one addition per element).
void add_into(void* dst, const void* src, std::size_t count, Dtype t);
void add_into(float* dst, const float* src, std::size_t count);
void add_into(double* dst, const double* src, std::size_t count);
void add_into(std::int32_t* dst, const std::int32_t* src, std::size_t count);
void add_into(std::int64_t* dst, const std::int64_t* src, std::size_t count);

}  // namespace gradsync
