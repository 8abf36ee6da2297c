#pragma once
// The `train` command line. Parsing happens before MPI starts, so it knows nothing about ranks.
#include <optional>
#include <string>
#include <vector>

#include "trainers/cli/run_settings.hpp"
#include "trainers/config/sync_spec.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

struct CliOutcome {
  std::optional<TrainConfig> config;  // set when training should run
  int exit_code = 0;                  // otherwise: 0 after --help, 2 after an error
  std::string message;                // help text or the one-line error
  bool print_run = false;             // --print-run: print the run's name and the fewest ranks it runs on, then exit
  std::optional<SyncSpec> spec;       // --spec's, whose modifiers later errors name (SyncSpec::explain)
  std::vector<Setting> flags;         // with `config`: the flags as parsed (flag_settings), for comparing ranks
};

// Parses train's flags (no MPI calls: it runs before MPI_Init, where BLIS is configured); checks that need the
// rank count come later, in validate(). With --spec, the flags it spells are parsed with the others.
CliOutcome parse_train_cli(int argc, char** argv);
// parse_train_cli on `args`, the flags without the program's name: for programs and tests that spell train's flags.
CliOutcome parse_train_args(std::vector<std::string> args);

// The run `spec` spells on train's defaults: train's parse of spec.flags, or nullopt with `problem` set to train's
// message as the spec explains it (SyncSpec::explain). For a spec of train's words (no own base).
std::optional<TrainConfig> spec_config(const SyncSpec& spec, std::string& problem);

}  // namespace gradsync
