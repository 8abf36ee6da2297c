#pragma once
// The `train` command line. Parsing happens before MPI starts, so it knows nothing about ranks.
#include <optional>
#include <string>

#include "trainers/config/train_config.hpp"

namespace gradsync {

struct CliOutcome {
  std::optional<TrainConfig> config;  // set when training should run
  int exit_code = 0;                  // otherwise: 0 after --help, 2 after an error
  std::string message;                // help text or the one-line error
};

// Parses train's flags (no MPI calls: it runs before MPI_Init, where BLIS is configured); checks that need the
// rank count come later, in validate().
CliOutcome parse_train_cli(int argc, char** argv);

}  // namespace gradsync
