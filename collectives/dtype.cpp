#include "collectives/dtype.hpp"

#include "cpu/isa_dispatch.hpp"

namespace gradsync {
namespace {

template <class T>
void sum_into(T* __restrict dst, const T* __restrict src, std::size_t count) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    T* __restrict d = dst;
    const T* __restrict s = src;
    for (std::size_t i = 0; i < count; ++i) d[i] += s[i];
  });
}

}  // namespace

std::size_t dtype_size(Dtype t) {
  switch (t) {
    case Dtype::f32: return sizeof(float);
    case Dtype::f64: return sizeof(double);
    case Dtype::i32: return sizeof(std::int32_t);
    case Dtype::i64: return sizeof(std::int64_t);
  }
  return 0;
}

MPI_Datatype mpi_type(Dtype t) {
  switch (t) {
    case Dtype::f32: return MPI_FLOAT;
    case Dtype::f64: return MPI_DOUBLE;
    case Dtype::i32: return MPI_INT32_T;
    case Dtype::i64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::f32: return "float";
    case Dtype::f64: return "double";
    case Dtype::i32: return "int32";
    case Dtype::i64: return "int64";
  }
  return "?";
}

void add_into(float* dst, const float* src, std::size_t count) { sum_into(dst, src, count); }
void add_into(double* dst, const double* src, std::size_t count) { sum_into(dst, src, count); }
void add_into(std::int32_t* dst, const std::int32_t* src, std::size_t count) { sum_into(dst, src, count); }
void add_into(std::int64_t* dst, const std::int64_t* src, std::size_t count) { sum_into(dst, src, count); }

void add_into(void* dst, const void* src, std::size_t count, Dtype t) {
  switch (t) {
    case Dtype::f32: return add_into(static_cast<float*>(dst), static_cast<const float*>(src), count);
    case Dtype::f64: return add_into(static_cast<double*>(dst), static_cast<const double*>(src), count);
    case Dtype::i32: return add_into(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(src), count);
    case Dtype::i64: return add_into(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(src), count);
  }
}

}  // namespace gradsync
