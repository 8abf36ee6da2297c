#pragma once
// train's privacy flags (--dp-clip, --dp-noise, --dp-delta, --secure-aggregation, --secure-range): declared beside
// the others by cli.cpp; the checks that need the whole configuration are trainers/config/privacy_budget.hpp's.
#include <CLI/CLI.hpp>

#include "trainers/config/privacy_options.hpp"

namespace gradsync {

// Declares the flags into `o`.
void add_privacy_options(CLI::App& app, PrivacyOptions& o);

// After the parse: a flag that would be ignored without the one it modifies (--dp-noise, --dp-delta without
// --dp-clip; --secure-range without --secure-aggregation). Throws CLI::ValidationError naming it.
void check_privacy_flags(const CLI::App& app, const PrivacyOptions& o);

}  // namespace gradsync
