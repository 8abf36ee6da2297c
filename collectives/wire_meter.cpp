#include "collectives/wire_meter.hpp"

#include <atomic>

#include "collectives/mpi_error.hpp"

namespace gradsync {
namespace {

// A progress thread (trainers/overlap/comm_engine.hpp) sends while the worker's thread reads.
std::atomic<std::uint64_t> g_bytes_sent{0};

}  // namespace

void note_sent(std::size_t count, MPI_Datatype type, int rank) {
  int size = 0;
  check_mpi(MPI_Type_size(type, &size), "MPI_Type_size (counting a send)", rank);
  g_bytes_sent.fetch_add(count * static_cast<std::uint64_t>(size), std::memory_order_relaxed);
}

std::uint64_t bytes_sent_so_far() { return g_bytes_sent.load(std::memory_order_relaxed); }

}  // namespace gradsync
