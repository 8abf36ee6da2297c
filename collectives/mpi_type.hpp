#pragma once
// The C++ element types Comm's typed calls take, and the MPI datatype each one travels as.
#include <mpi.h>

#include <concepts>
#include <cstdint>
#include <ranges>
#include <type_traits>

namespace gradsync {

// Characters (texts), 32- and 64-bit signed integers (counts, flags, ranks, checksums) and floating point. No
// unsigned 64-bit type: Debian's MPICH 4.0 compares MPI_UINT64_T as signed under MPI_MAX and MPI_MIN.
template <class T>
concept MpiElement = std::same_as<T, char> || std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
    std::same_as<T, float> || std::same_as<T, double>;

// The datatype of one element of T.
template <MpiElement T>
MPI_Datatype mpi_type_of() {
  if constexpr (std::same_as<T, char>) return MPI_CHAR;
  if constexpr (std::same_as<T, std::int32_t>) return MPI_INT32_T;
  if constexpr (std::same_as<T, std::int64_t>) return MPI_INT64_T;
  if constexpr (std::same_as<T, float>) return MPI_FLOAT;
  if constexpr (std::same_as<T, double>) return MPI_DOUBLE;
}

// A contiguous run of MpiElements that knows its length: std::vector, std::array, std::span, std::string.
template <class B>
concept MpiBuffer = std::ranges::contiguous_range<B> && std::ranges::sized_range<B> &&
    MpiElement<std::remove_cv_t<std::ranges::range_value_t<B>>>;

template <MpiBuffer B>
using MpiBufferElement = std::remove_cv_t<std::ranges::range_value_t<B>>;

}  // namespace gradsync
