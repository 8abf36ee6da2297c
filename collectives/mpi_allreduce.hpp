#pragma once
#include <vector>
#include "collectives/allreduce.hpp"

namespace gradsync {

// The vendor baseline: MPI_Allreduce with MPI_IN_PLACE and MPI_SUM; the MPI library picks the algorithm. Its
// nonblocking form (start/test/wait) is MPI_Iallreduce, which Open MPI implements separately (libnbc), with its own
// algorithms: run() stays the blocking call so that the baseline is what users of MPI_Allreduce get.
class MpiAllreduce final : public Allreduce {
 public:
  // Local (no communication); run() is then collective over `comm`.
  MpiAllreduce(Comm comm, AllreduceOptions options) : Allreduce(std::move(comm), options) {}
  std::string_view name() const override { return "mpi"; }

 private:
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override { return true; }
  void reduce(std::byte* data, std::size_t count, Dtype type) override;

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<std::byte> send_copy_;  // start_iallreduce_in_place's, in a simulation build
};

}  // namespace gradsync
