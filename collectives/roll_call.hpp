#pragma once
// Who is here: when a collective has waited long enough that the watchdog suspects a hang, each waiting rank tells
// every other rank of the communicator which collective it is in, and listens for the same from them. A rank that is
// in the same call answers; a rank stuck elsewhere in gradsync's collectives answers with where it is; a rank that
// never entered any (busy, sleeping, dead) says nothing. With the slow-rank report on, each message also carries the
// sender's last entry times (trace/recorder.hpp), so that the hang report can say which of the ranks that still talk
// was late before the hang: the ranks cannot run a collective to gather them any more. The findings go to the
// watchdog's hang report.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "trace/span.hpp"

namespace gradsync {

// Entry times one roll call message carries at most: bounds the message (24 bytes each) and the buffers of a roll
// call (one message per rank of the communicator).
inline constexpr std::size_t kRollCallEntries = 256;

class RollCall {
 public:
  // Posts a receive from, and a send of (object, seq) and `recent` to, every other rank of `comm` on `tag` (a tag of
  // the calling collective's own). `recent`: this rank's last entries on rank 0's clock, at most kRollCallEntries
  // (more are cut to the newest); `recording` false when this run records no entry times (then `recent` is ignored
  // and the report says how to record them). Copied. Not collective: each rank starts its own when its wait grows
  // long.
  RollCall(const Comm& comm, int tag, std::uint64_t object, std::uint64_t seq, bool recording,
           std::span<const CollectiveEntry> recent);
  // Cancels the receives still pending (the collective went on after all) and frees the sends.
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Takes in the answers that arrived; returns true if any did since the last call (the findings changed).
  bool poll();
  // The findings so far: one line ("roll call: in this call: ranks 0 1 2; never entered it: rank 3"), then, when
  // recording, the lateness of the ranks that answered (trace/slow_rank.hpp's format_hang_lateness).
  std::string findings() const;

 private:
  // A message: object, seq, entry count (-1: not recording), then (object, seq, aligned nanoseconds) per entry.
  using Message = std::vector<std::int64_t>;
  static constexpr std::size_t kHeader = 3;
  const Comm& comm_;
  bool recording_;
  Message mine_;
  std::vector<Message> answers_;  // per rank, kHeader + 3 * kRollCallEntries each
  std::vector<MPI_Request> receives_, sends_;
  std::vector<bool> answered_;
};

}  // namespace gradsync
