#include "collectives/mpi_error.hpp"

#include <fmt/format.h>

#include <string>

namespace gradsync {

void check_mpi(int rc, const char* call, int rank) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  throw MpiError(
      fmt::format("{} failed on rank {}: {}", call, rank, std::string(text, static_cast<std::size_t>(length))));
}

}  // namespace gradsync
