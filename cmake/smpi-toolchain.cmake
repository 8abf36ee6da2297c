# Toolchain for a SimGrid SMPI build (scripts/simulate.sh uses it): every rank becomes a thread of one smpirun
# process on a simulated platform. smpicc/smpicxx are MPI wrappers like mpicc, so FindMPI finds MPI through the
# compiler itself and the project's CMakeLists need no simulation-specific code. Their binaries are shared
# libraries that smpirun loads, so they run only under smpirun.
set(CMAKE_C_COMPILER smpicc)
set(CMAKE_CXX_COMPILER smpicxx)
set(MPI_C_COMPILER smpicc)
set(MPI_CXX_COMPILER smpicxx)
# One place for the clash between smpi_helpers.h's exit(x) macro and members named exit (cmake/smpi_compat.h).
set(CMAKE_CXX_FLAGS_INIT "-include ${CMAKE_CURRENT_LIST_DIR}/smpi_compat.h")
set(CMAKE_C_FLAGS_INIT "-include ${CMAKE_CURRENT_LIST_DIR}/smpi_compat.h")
