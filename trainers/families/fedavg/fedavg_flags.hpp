#pragma once
// train's federated-averaging flags (--sync fedavg), which the family's registry entry registers on the command line
// (SyncFamilyInfo's flags): checked and turned into TrainConfig::fed here.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_registry.hpp"

namespace gradsync {

// Registers --clients, --client-fraction, --local-epochs, --local-steps, --rounds, --partition, --aggregate and
// --prox-mu on `app`; the state holds what CLI11 reads as text or a wider type before it becomes FederatedOptions.
std::unique_ptr<FlagState> add_fedavg_flags(CLI::App& app, TrainConfig& c);

// After every family's given-flag checks (which have refused a federated flag given to another family): throws
// CLI::ValidationError naming the flag for a bad value. Parsed whatever the --sync; their defaults parse.
void take_fedavg_flags(const CLI::App& app, const FlagState* state, TrainConfig& c);

}  // namespace gradsync
