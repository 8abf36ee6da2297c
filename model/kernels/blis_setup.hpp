#pragma once
// BLIS's set-up for this process: the kernel set it runs by default and the other sets it can run. Where BLIS
// chose its slow `generic` kernels on a CPU it does not recognize, configure_blis() selects the best kernel set the
// installed BLIS has (model/kernels/blis_arch.hpp decides which).
#include <string>
#include <vector>

namespace gradsync {

struct BlisConfig {
  std::string arch;    // the kernel set BLIS runs with by default, e.g. "zen3"
  std::string reason;  // why: "detected by BLIS", "BLIS_ARCH_TYPE set by the user", "BLIS chose generic; ..."
  int threads = 1;
  bool user_arch = false;                // BLIS_ARCH_TYPE was set by the user: no kernel set is chosen for them
  std::vector<std::string> kernel_sets;  // sets this BLIS has and this CPU runs (probed), candidates for a plan
  // One line for run headers: the default set, why, the thread count. kernels_summary
  // (model/kernels/installed_plan.hpp) adds the installed plan's line to it.
  std::string summary() const;
};

// Must run before any other BLIS call in the process and before MPI_Init: it probes BLIS in forked children,
// because BLIS fixes its kernel choice, reading BLIS_ARCH_TYPE, once at initialization, and a set this CPU
// cannot run kills the process that tries it. A BLIS_ARCH_TYPE already set by the user is respected (and then
// no other set is probed); a set's name there is turned into its index, and a value that is neither a number nor
// a set of this BLIS throws std::invalid_argument. `threads` is BLIS's thread count for this process (>= 1).
BlisConfig configure_blis(int threads);
// What the last configure_blis call of this process returned (a default BlisConfig before any).
const BlisConfig& configured_blis();

}  // namespace gradsync
