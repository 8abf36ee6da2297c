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

// Collective over `world`, before agree_on_settings; a rank whose own command line did not parse calls it too (after
// MPI_Init), so that no rank waits for one that left and rank 0 names the error whichever rank's line it was in.
// `problem`: this rank's parse error as it would print it ("train: error: ..."), "" if its command line parsed.
// "" on every rank where every rank's parsed; otherwise non-empty on every rank: on rank 0 the line to print (its
// own error if its line did not parse, else "train: error: rank R's command line does not parse: ..." for the
// lowest such R), on the others a line saying rank 0 prints it. One MPI_Allgather of an int; when a rank other than
// 0 failed alone of the two, one string broadcast from it. A failed MPI call throws MpiError naming it.
std::string agree_on_parsing(const Comm& world, const std::string& problem);

}  // namespace gradsync
