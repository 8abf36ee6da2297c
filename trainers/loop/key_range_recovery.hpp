#pragma once
// The parameter server's half of an in-place recovery (trainers/loop/in_place.hpp): its model lives on the servers,
// each key range on its primary and the replicas that follow it (ParameterServer's chain replication), and the
// survivors rebuild the whole model and optimizer state at the newest step every range can give.
#include <cstdint>

#include "collectives/comm.hpp"
#include "trainers/loop/live_state.hpp"

namespace gradsync {

struct KeyRangeRecovery {
  std::int64_t step = 0;  // the global step every key range was rebuilt at
  int servers_left = 0;   // the survivors that served: world ranks 0..servers_left-1 of `survivors`
};

// Collective over `survivors`, the ranks left of a run whose `servers` servers held each key range (partition of
// `mine.params`' size over them) on `holders` servers, range s on servers s, s+1, ... (mod servers). `mine` is the
// caller's LiveState (a server's: index, ranges now and one step back; a worker's: server -1). The step is the
// lowest of the ranges' newest; each range is taken from the lowest-ranked survivor holding it at that step (now, or
// one step back), and on return every survivor's mine.params and mine.optimizer hold the whole state at it. Throws
// InPlaceRecoveryError, the same on every survivor, naming the range when no survivor holds it (all its servers lost)
// or none holds it at that step, and when no server is left.
KeyRangeRecovery recover_key_ranges(const Comm& survivors, int servers, int holders, LiveState& mine);

}  // namespace gradsync
