// Comm::reserve_tags: a tag counter kept as an attribute on the MPI communicator, so that it is shared by every Comm
// wrapping that communicator and freed with it.
#include <fmt/format.h>

#include <stdexcept>

#include "collectives/comm.hpp"

namespace gradsync {
namespace {

int delete_counter(MPI_Comm, int, void* value, void*) {
  delete static_cast<std::int64_t*>(value);
  return MPI_SUCCESS;
}

// Created once per process (local). A duplicated communicator is a new context for messages and starts its own
// counter: the attribute is not copied.
int counter_keyval() {
  static const int keyval = [] {
    int k = MPI_KEYVAL_INVALID;
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_counter, &k, nullptr),
              "MPI_Comm_create_keyval (tag counter)", -1);
    return k;
  }();
  return keyval;
}

int tag_upper_bound(int rank) {
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr (MPI_TAG_UB)", rank);
  if (!found) throw MpiError(fmt::format("MPI_Comm_get_attr on rank {}: MPI_TAG_UB is not set", rank));
  return *static_cast<int*>(value);
}

}  // namespace

int first_reserved_tag(std::int64_t next, int n, int tag_ub) {
  if (n < 1 || n > tag_ub - kFirstReservedTag + 1)
    throw std::invalid_argument(
        fmt::format("reserve_tags: {} tags asked, tags {}..{} available", n, kFirstReservedTag, tag_ub));
  return next + n - 1 > tag_ub || next < kFirstReservedTag ? kFirstReservedTag : static_cast<int>(next);
}

int Comm::reserve_tags(int n) const {
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(native(), counter_keyval(), &value, &found), "MPI_Comm_get_attr (tag counter)", rank_);
  auto* next = static_cast<std::int64_t*>(value);
  if (!found) {
    next = new std::int64_t(kFirstReservedTag);
    const int rc = MPI_Comm_set_attr(native(), counter_keyval(), next);
    if (rc != MPI_SUCCESS) delete next;
    check_mpi(rc, "MPI_Comm_set_attr (tag counter)", rank_);
  }
  const int first = first_reserved_tag(*next, n, tag_upper_bound(rank_));
  *next = std::int64_t{first} + n;
  return first;
}

}  // namespace gradsync
