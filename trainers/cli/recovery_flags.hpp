#pragma once
// train's --recover: what the survivors of a lost process do (trainers/config/recovery_options.hpp), declared beside
// the other flags by cli.cpp.
#include <CLI/CLI.hpp>

#include "trainers/config/train_config.hpp"

namespace gradsync {

// --recover auto|inplace|abort into c.recover; another word is refused at parse time, naming the three.
void add_recovery_options(CLI::App& app, TrainConfig& c);

}  // namespace gradsync
