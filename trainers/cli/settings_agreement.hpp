#pragma once
// Ranks started with different settings (mpirun's `:` syntax, an environment that differs by host) refused before
// they train: the first communication of a `train` run compares every rank's settings (run_settings.hpp).
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "trainers/cli/run_settings.hpp"

namespace gradsync {

// Collective over `world`; call it on every rank before any other communication of the run. `mine`: this rank's
// settings (flag_settings, environment_settings, data_settings). One MPI_Allgather of a 64-bit digest of each
// rank's settings_text, of the same size on every rank whatever the settings, so that ranks that differ cannot
// deadlock in it. Where all digests are equal, returns "" on every rank with nothing more sent. Otherwise the first
// rank whose digest differs from rank 0's broadcasts its settings (two broadcasts: the length, then the text), and
// every rank returns a non-empty text: rank 0 the difference (describe_difference: "rank 1's settings differ from
// rank 0's: --lr 0.2 (rank 0: 0.1)"), the others a line saying rank 0 names it, so that rank 0 alone need print.
// A failed MPI call throws MpiError naming it.
std::string agree_on_settings(const Comm& world, const std::vector<Setting>& mine);

}  // namespace gradsync
