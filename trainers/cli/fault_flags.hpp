#pragma once
// train's fault flags (--straggler, and the tests' --inject-pause and --inject-nan-step): declared beside the others
// by cli.cpp, their text turned into TrainConfig::faults here.
#include <CLI/CLI.hpp>
#include <string>

#include "trainers/core/fault_injection.hpp"

namespace gradsync {

// What CLI11 reads as text before it becomes FaultInjection.
struct FaultFlags {
  std::string straggler, pause, kill;
};

void add_fault_options(CLI::App& app, FaultInjection& f, FaultFlags& raw);

// Throws CLI::ValidationError naming the flag when its text is not one of its forms.
void take_faults(const FaultFlags& raw, FaultInjection& f);

}  // namespace gradsync
