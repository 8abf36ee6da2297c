#include "collectives/roll_call.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "trace/slow_rank.hpp"

namespace gradsync {
namespace {

bool same_call(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  return a[0] == b[0] && a[1] == b[1];
}

// The entries a message carries, back on the clock in seconds.
std::vector<CollectiveEntry> entries_of(const std::vector<std::int64_t>& m, std::size_t header) {
  std::vector<CollectiveEntry> out;
  const auto n = std::min((m.size() - header) / 3, static_cast<std::size_t>(std::max<std::int64_t>(m[2], 0)));
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t* e = &m[header + 3 * i];
    out.push_back({static_cast<double>(e[2]) * 1e-9, static_cast<std::uint64_t>(e[1]), static_cast<std::uint32_t>(e[0])});
  }
  return out;
}

}  // namespace

RollCall::RollCall(const Comm& comm, int tag, std::uint64_t object, std::uint64_t seq, bool recording,
                   std::span<const CollectiveEntry> recent)
    : comm_(comm), recording_(recording),
      answers_(static_cast<std::size_t>(comm.size()), Message(kHeader + 3 * kRollCallEntries)),
      receives_(static_cast<std::size_t>(comm.size()), MPI_REQUEST_NULL),
      sends_(static_cast<std::size_t>(comm.size()), MPI_REQUEST_NULL), answered_(static_cast<std::size_t>(comm.size())) {
  if (recent.size() > kRollCallEntries) recent = recent.last(kRollCallEntries);
  mine_ = {static_cast<std::int64_t>(object), static_cast<std::int64_t>(seq),
           recording ? static_cast<std::int64_t>(recent.size()) : -1};
  if (recording)
    for (const CollectiveEntry& e : recent)
      mine_.insert(mine_.end(),
                   {static_cast<std::int64_t>(e.object), static_cast<std::int64_t>(e.seq), std::llround(e.at_s * 1e9)});
  answered_[static_cast<std::size_t>(comm.rank())] = true;
  answers_[static_cast<std::size_t>(comm.rank())] = mine_;
  for (int q = 0; q < comm.size(); ++q) {
    if (q == comm.rank()) continue;
    const auto i = static_cast<std::size_t>(q);
    receives_[i] = comm.irecv(answers_[i], q, tag);  // a shorter message than the buffer: its count says how long
    sends_[i] = comm.isend(mine_, q, tag);
  }
}

RollCall::~RollCall() {
  for (MPI_Request& r : receives_)
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r), MPI_Request_free(&r);  // unchecked: a destructor must not throw
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

bool RollCall::poll() {
  bool changed = false;
  for (std::size_t i = 0; i < answered_.size(); ++i) {
    if (answered_[i]) continue;
    int done = 0;
    check_mpi(MPI_Test(&receives_[i], &done, MPI_STATUS_IGNORE), "MPI_Test (roll call)", comm_.rank());
    answered_[i] = done != 0;
    changed = changed || done;
  }
  return changed;
}

std::string RollCall::findings() const {
  std::string here, missing, elsewhere;
  std::vector<std::optional<std::vector<CollectiveEntry>>> heard(answers_.size());
  for (std::size_t i = 0; i < answers_.size(); ++i) {
    if (!answered_[i]) {
      missing += fmt::format(" {}", i);
      continue;
    }
    heard[i] = entries_of(answers_[i], kHeader);
    if (same_call(answers_[i], mine_))
      here += fmt::format(" {}", i);
    else
      elsewhere += fmt::format(" {} (object {}, call #{})", i, answers_[i][0], answers_[i][1]);
  }
  std::string out =
      fmt::format("roll call (ranks of this communicator): in this call:{}; never entered it:{}{}{}", here,
                  missing.empty() ? " none" : missing, elsewhere.empty() ? "" : "; in another call:", elsewhere);
  if (!recording_) return out + "\nlateness before the hang: not recorded (this run was started with --no-slow-ranks)";
  std::string lateness = format_hang_lateness(heard);
  if (!lateness.empty() && lateness.back() == '\n') lateness.pop_back();  // the watchdog ends the report's last line
  return out + "\n" + lateness;
}

}  // namespace gradsync
