#pragma once
// Checkpoint errors that every rank of the run sees at once: writing and resuming are collective, so a problem one
// rank finds (a file it cannot read, a disk that is full) must stop all of them, with one message.
#include <string>

#include "collectives/comm.hpp"

namespace gradsync {

// Collective over `world`: every rank gets rank 0's `text`. With `is_error` (rank 0's flag; the others' is not
// read), every rank throws it as CheckpointError instead.
std::string broadcast_text(std::string text, bool is_error, const Comm& world);

// Collective over `world`: returns on every rank if every rank's `mine` is empty; otherwise every rank throws
// CheckpointError with the message of the lowest rank that had one. Also a barrier.
void agree_on_errors(const std::string& mine, const Comm& world);

}  // namespace gradsync
