#pragma once
// train's flags for looking inside a run (--trace, --trace-steps, --slow-ranks, --explain): declared beside the
// others by cli.cpp, the trace window parsed here.
#include <CLI/CLI.hpp>
#include <string>

#include "trainers/config/observe_options.hpp"

namespace gradsync {

// Declares the flags into `o`; --trace-steps' text goes to `trace_steps` for parse_trace_window.
void add_observe_options(CLI::App& app, ObserveOptions& o, std::string& trace_steps);

// --trace-steps: "N" (the last N steps) or "A:B"; empty: the default window. Throws CLI::ValidationError otherwise.
TraceWindow parse_trace_window(const std::string& text);

}  // namespace gradsync
