#pragma once
// gradsync's public surface, all of it: what examples/ and the PyTorch backend (python/) include, and the trainer
// and the benchmarks use. Installed under <prefix>/include/gradsync/ with the headers below; the package puts both
// <prefix>/include and <prefix>/include/gradsync on the include path (the headers include each other as
// "collectives/comm.hpp"). Link gradsync::gradsync (CMake) or `pkg-config --libs gradsync`.
//
//   Comm (collectives/comm.hpp)               a communicator handle on an MPI_Comm, every MPI call checked
//   MpiSession (collectives/mpi_session.hpp)  MPI's lifetime in a program's main()
//   make_allreduce (collectives/methods.hpp)  an allreduce method by name (ring, rd, rhd, hier, auto, mpi, ring-bf16,
//                                             ps, ps-sharded), planned once; run() blocks, start/test/wait do not
//                                             (collectives/allreduce.hpp)
//   compressors (compression/compressors.hpp) PowerSGD, top-k and sign on a flat buffer of tensors, with error
//                                             feedback (compression/error_feedback.hpp)
//   CostModel (collectives/cost_model.hpp)    the alpha-beta-gamma model "auto" chooses by, and its tuning file
//   start_watchdog, WaitScope                 end a job whose ranks wait on each other too long, naming the wait
//     (collectives/watchdog.hpp)
#include "collectives/comm.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/methods.hpp"
#include "collectives/mpi_session.hpp"
#include "collectives/watchdog.hpp"
#include "compression/compressors.hpp"
#include "compression/error_feedback.hpp"
#include "gradsync/version.hpp"
