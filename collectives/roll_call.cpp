#include "collectives/roll_call.hpp"

#include <fmt/format.h>

namespace gradsync {

RollCall::RollCall(const Comm& comm, int tag, std::uint64_t object, std::uint64_t seq)
    : comm_(comm), mine_{static_cast<std::int64_t>(object), static_cast<std::int64_t>(seq)},
      answers_(static_cast<std::size_t>(comm.size())), receives_(static_cast<std::size_t>(comm.size()), MPI_REQUEST_NULL),
      sends_(static_cast<std::size_t>(comm.size()), MPI_REQUEST_NULL), answered_(static_cast<std::size_t>(comm.size())) {
  answered_[static_cast<std::size_t>(comm.rank())] = true;
  answers_[static_cast<std::size_t>(comm.rank())] = mine_;
  for (int q = 0; q < comm.size(); ++q) {
    if (q == comm.rank()) continue;
    const auto i = static_cast<std::size_t>(q);
    receives_[i] = comm.irecv(answers_[i], q, tag);
    sends_[i] = comm.isend(mine_, q, tag);
  }
}

RollCall::~RollCall() {
  for (MPI_Request& r : receives_)
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r), MPI_Request_free(&r);  // unchecked: a destructor must not throw
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

std::string RollCall::poll() {
  std::string here, missing, elsewhere;
  for (int q = 0; q < comm_.size(); ++q) {
    const auto i = static_cast<std::size_t>(q);
    if (!answered_[i]) {
      int done = 0;
      check_mpi(MPI_Test(&receives_[i], &done, MPI_STATUS_IGNORE), "MPI_Test (roll call)", comm_.rank());
      answered_[i] = done != 0;
    }
    if (!answered_[i])
      missing += fmt::format(" {}", q);
    else if (answers_[i] == mine_)
      here += fmt::format(" {}", q);
    else
      elsewhere += fmt::format(" {} (object {}, call #{})", q, answers_[i][0], answers_[i][1]);
  }
  return fmt::format("roll call (ranks of this communicator): in this call:{}; never entered it:{}{}{}", here,
                     missing.empty() ? " none" : missing, elsewhere.empty() ? "" : "; in another call:", elsewhere);
}

}  // namespace gradsync
