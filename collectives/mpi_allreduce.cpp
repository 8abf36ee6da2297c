#include "collectives/mpi_allreduce.hpp"
#include "collectives/allreduce_method.hpp"

#include "collectives/watchdog.hpp"

namespace gradsync {

void MpiAllreduce::reduce(std::byte* data, std::size_t count, Dtype type) {
  const WaitScope wait("MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, comm_.to_int_count(count, "MPI_Allreduce"), mpi_type(type), MPI_SUM,
                          comm_.native()),
            "MPI_Allreduce", comm_.rank());
}

void MpiAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  start_iallreduce_in_place(data, comm_.to_int_count(count, "MPI_Iallreduce"), mpi_type(type), MPI_SUM, comm_.native(),
                            &request_, send_copy_, "MPI_Iallreduce", comm_.rank());
  stage_ = {{&request_, 1}, "MPI_Iallreduce"};
}

extern const AllreduceMethod mpi_allreduce_method = {
    .name = "mpi",
    .summary = "MPI_Allreduce (MPI_IN_PLACE, MPI_SUM): the vendor baseline",
    .library = true,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<MpiAllreduce>(comm, o);
    },
};

}  // namespace gradsync
