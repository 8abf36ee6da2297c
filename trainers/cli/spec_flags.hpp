#pragma once
// train's --spec and --print-run, for drivers that run train once per sync spec (trainers/config/sync_spec.hpp):
// declared beside the others by cli.cpp, the spec checked against the flags given with it here.
#include <CLI/CLI.hpp>
#include <string>

#include "trainers/config/sync_spec.hpp"

namespace gradsync {

struct SpecFlags {
  std::string spec;
  bool print_run = false;
};

void add_spec_options(CLI::App& app, SpecFlags& f);

// The spec --spec gave. Throws CLI::ValidationError naming --spec when its words are not train's, or when a flag a
// spec sets (sync_spec_flags) was given beside it: the spec is the whole synchronization, never half overridden.
SyncSpec take_spec(const CLI::App& app, const SpecFlags& f);

}  // namespace gradsync
