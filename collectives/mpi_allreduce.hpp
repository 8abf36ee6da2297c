#pragma once
#include "collectives/allreduce.hpp"

namespace gradsync {

// The vendor baseline: MPI_Allreduce with MPI_IN_PLACE and MPI_SUM; Open MPI picks the algorithm.
class MpiAllreduce final : public Allreduce {
 public:
  // Local (no communication); run() is then collective over `comm`.
  MpiAllreduce(Comm comm, AllreduceOptions options) : Allreduce(std::move(comm), options) {}
  std::string_view name() const override { return "mpi"; }

 private:
  void reduce(void* data, std::size_t count, Dtype type) override;
};

}  // namespace gradsync
