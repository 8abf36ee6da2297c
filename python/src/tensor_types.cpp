#include "tensor_types.hpp"

namespace gradsync::torch_backend {

std::string dtype_text(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: return c10::toString(type);
  }
}

MPI_Datatype mpi_datatype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kShort: return MPI_INT16_T;
    case at::kChar: return MPI_INT8_T;
    case at::kByte: return MPI_UINT8_T;
    case at::kBool: return MPI_C_BOOL;
    default: return MPI_DATATYPE_NULL;
  }
}

std::optional<Dtype> summed_as(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kBFloat16: return Dtype::f32;
    case at::kDouble: return Dtype::f64;
    case at::kInt: return Dtype::i32;
    case at::kLong: return Dtype::i64;
    default: return std::nullopt;
  }
}

std::string op_text(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "op " + std::to_string(static_cast<int>(op));
  }
}

MPI_Op mpi_op(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return MPI_SUM;
    case c10d::ReduceOp::PRODUCT: return MPI_PROD;
    case c10d::ReduceOp::MIN: return MPI_MIN;
    case c10d::ReduceOp::MAX: return MPI_MAX;
    case c10d::ReduceOp::BAND: return MPI_BAND;
    case c10d::ReduceOp::BOR: return MPI_BOR;
    case c10d::ReduceOp::BXOR: return MPI_BXOR;
    default: return MPI_OP_NULL;
  }
}

std::string placement_problem(const at::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  if (t.device().type() != at::kCPU)
    return "a tensor on " + t.device().str() + "; the gradsync backend takes CPU tensors";
  if (t.layout() != at::kStrided) return "a sparse tensor; the gradsync backend takes dense tensors";
  return "";
}

}  // namespace gradsync::torch_backend
