#pragma once
// ULFM's declarations where the MPI has them: GRADSYNC_HAVE_ULFM is 1 when Open MPI's ftmpi extension (mpi-ext.h)
// declares MPIX_Comm_revoke, MPIX_Comm_shrink, MPIX_Comm_agree and MPIX_Comm_get_failed, else 0. Only
// collectives/fault_tolerance.cpp and mpi_error.cpp read it; everything else asks fault_tolerance.hpp.
#include <mpi.h>

#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#if defined(OPEN_MPI) && defined(MPIX_ERR_PROC_FAILED) && defined(MPIX_ERR_REVOKED) && \
    defined(OMPI_HAVE_MPIX_COMM_GET_FAILED)
#define GRADSYNC_HAVE_ULFM 1
#else
#define GRADSYNC_HAVE_ULFM 0
#endif
