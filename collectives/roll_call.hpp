#pragma once
// Who is here: when a collective has waited long enough that the watchdog suspects a hang, each waiting rank tells
// every other rank of the communicator which collective it is in, and listens for the same from them. A rank that is
// in the same call answers; a rank stuck elsewhere in gradsync's collectives answers with where it is; a rank that
// never entered any (busy, sleeping, dead) says nothing. The findings go to the watchdog's hang report.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

class RollCall {
 public:
  // Posts a receive from, and a send of (object, seq) to, every other rank of `comm` on `tag` (a tag of the calling
  // collective's own). Not collective: each rank starts its own when its wait grows long.
  RollCall(const Comm& comm, int tag, std::uint64_t object, std::uint64_t seq);
  // Cancels the receives still pending (the collective went on after all) and frees the sends.
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Takes in the answers that arrived; returns the findings so far in one line ("roll call: in this call: ranks
  // 0 1 2; never entered it: rank 3").
  std::string poll();

 private:
  using Where = std::array<std::int64_t, 2>;  // (object, seq)
  const Comm& comm_;
  Where mine_;
  std::vector<Where> answers_;  // per rank
  std::vector<MPI_Request> receives_, sends_;
  std::vector<bool> answered_;
};

}  // namespace gradsync
