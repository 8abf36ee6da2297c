#pragma once
// How torch's element types and reduce ops map to MPI's and gradsync's, and their names in error messages.
#include <ATen/ATen.h>
#include <mpi.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <optional>
#include <string>

#include <gradsync/gradsync.hpp>

namespace gradsync::torch_backend {

// "float32", "bfloat16", "int64", ...: torch's own names without "torch.".
std::string dtype_text(at::ScalarType type);
// The MPI datatype of one element, or MPI_DATATYPE_NULL where MPI has none (float16, bfloat16, complex).
MPI_Datatype mpi_datatype(at::ScalarType type);
// The gradsync element type of a tensor the allreduce methods sum; bfloat16 is summed widened to float32.
std::optional<Dtype> summed_as(at::ScalarType type);
// "SUM", "MIN", ...; and the MPI op of a reduce op (MPI_OP_NULL for AVG and PREMUL_SUM, which MPI has not).
std::string op_text(c10d::ReduceOp::RedOpType op);
MPI_Op mpi_op(c10d::ReduceOp::RedOpType op);
// Empty, or why `t` cannot take part in a collective of this backend: not on the CPU, not dense.
std::string placement_problem(const at::Tensor& t);

}  // namespace gradsync::torch_backend
