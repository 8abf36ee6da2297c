#pragma once
// train's flags for Byzantine workers and the defences (--byzantine, --attack, --robust-aggregation, --eval-attack):
// declared beside the others by cli.cpp, their text turned into TrainConfig::robust here.
#include <CLI/CLI.hpp>
#include <string>

#include "trainers/config/robustness_options.hpp"

namespace gradsync {

// What CLI11 reads as text before it becomes RobustnessOptions.
struct RobustFlags {
  std::string attack, aggregation = "mean", eval_attack;
};

void add_robust_options(CLI::App& app, RobustnessOptions& r, RobustFlags& raw);

// Parses the texts (the aggregator's F left out defaults to --byzantine) and checks --attack and --byzantine go
// together. Throws CLI::ValidationError naming the flag.
void take_robust(const RobustFlags& raw, RobustnessOptions& r);

}  // namespace gradsync
