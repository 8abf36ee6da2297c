#pragma once
// The bytes this process has handed to MPI point-to-point sends from gradsync's own code: every send site in
// collectives/ notes what it posts here, so train and bench_sync can report the wire bytes a step cost without a
// profiling layer. A collective of the MPI library (the vendor baseline's MPI_Allreduce, the small agreement and
// statistics reductions) moves bytes this meter cannot see: readers say so where they show it.
#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace gradsync {

// Adds `count` elements of `type` (the count and type the send was posted with) that `rank` sent. Any thread; cheap
// enough for every message (MPI_Type_size and one relaxed atomic add). A failed MPI_Type_size throws MpiError.
void note_sent(std::size_t count, MPI_Datatype type, int rank);
// Bytes noted since the process started; readers take differences.
std::uint64_t bytes_sent_so_far();

}  // namespace gradsync
