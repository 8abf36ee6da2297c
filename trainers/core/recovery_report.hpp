#pragma once
// What a run reports of each in-place recovery (trainers/loop/in_place.hpp): a line per failure, and the summary's
// count.
#include <cstdint>
#include <string>
#include <vector>

namespace gradsync {

// One recovery as the run reports it (a line per failure, and the summary's efficiency).
struct RecoveryReport {
  std::vector<int> lost;           // world ranks (MPI_COMM_WORLD's numbering) that failed
  std::vector<std::string> hosts;  // where they ran, as far as the survivors knew (the same order)
  int ranks_before = 0, ranks_after = 0, workers_after = 0;
  int servers_after = 0;          // a family with servers: those left, which now serve every key range
  std::int64_t resumed_step = 0;  // the global step the run continues from
  std::int64_t lost_steps = 0;    // steps begun past it that no survivor finished: done again (at most one)
  double seconds = 0;             // from the failure reaching the first survivor to the new roles being planned
  int joined = 0;                 // --respawn: successors merged in after it
  double join_seconds = 0;        // from the spawn to the successors holding the run's state
};

}  // namespace gradsync
