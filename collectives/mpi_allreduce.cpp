#include "collectives/mpi_allreduce.hpp"

#include "collectives/watchdog.hpp"

namespace gradsync {

void MpiAllreduce::reduce(void* data, std::size_t count, Dtype type) {
  const WaitScope wait("MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, comm_.to_int_count(count, "MPI_Allreduce"), mpi_type(type), MPI_SUM,
                          comm_.native()),
            "MPI_Allreduce", comm_.rank());
}

}  // namespace gradsync
