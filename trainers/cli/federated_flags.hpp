#pragma once
// train's federated-averaging flags (--sync fedavg): declared beside the others by cli.cpp, checked and turned into
// TrainConfig::fed here.
#include <CLI/CLI.hpp>
#include <string>

#include "trainers/config/train_config.hpp"

namespace gradsync {

// What CLI11 reads as text before it becomes FederatedOptions.
struct FederatedFlags {
  std::string partition = "iid", aggregate = "ring";
  long clients = 100, local_steps = 0;
  int rounds = 0;
};

void add_federated_options(CLI::App& app, TrainConfig& c, FederatedFlags& raw);

// After check_given_flags (which has refused a federated flag given to another family: trainers/families/fedavg/):
// throws CLI::ValidationError naming the flag for a bad value. Parsed whatever the --sync; their defaults parse.
void take_federated(const CLI::App& app, const FederatedFlags& raw, TrainConfig& c);

}  // namespace gradsync
