#include "trainers/cli/observe_flags.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace gradsync {

void add_observe_options(CLI::App& app, ObserveOptions& o, std::string& trace_steps) {
  app.add_option("--trace", o.trace_file,
                 "write a Chrome trace (Perfetto, chrome://tracing) of the run's last steps to this file, and print the "
                 "clock alignment and the slow-rank report");
  app.add_option("--trace-steps", trace_steps,
                 fmt::format("which steps the trace keeps: N = the last N (default {}), A:B = global steps A to B; at "
                             "most {} steps",
                             TraceWindow::kDefaultLastSteps, TraceWindow::kMaxSteps));
  CLI::Option* table = app.add_flag_callback(
      "--slow-ranks", [&o] { o.slow_ranks = SlowRanks::table; },
      "print the whole slow-rank report at the end: every rank's share of last entries into collectives and its median "
      "lateness, and the clock alignment (without it, one line names a consistently late rank, if there is one)");
  app.add_flag_callback(
         "--no-slow-ranks", [&o] { o.slow_ranks = SlowRanks::off; },
         "record no collective entry times: no slow-rank line at the end, and a hang report without lateness")
      ->excludes(table);
  app.add_flag("--explain", o.explain,
               "print auto's choices: every candidate's prediction, the choice, its measured time");
}

// --trace-steps: "N" (the last N steps) or "A:B".
TraceWindow parse_trace_window(const std::string& text) {
  TraceWindow w;
  if (text.empty()) return w;
  long a = -1, b = -1;
  char tail = 0;
  const int got = std::sscanf(text.c_str(), "%ld:%ld%c", &a, &b, &tail);
  if (got == 1 && text.find(':') == std::string::npos && a > 0)
    w.last_steps = a;
  else if (got == 2 && a >= 0 && b >= a)
    w.first = a, w.last = b;
  else
    throw CLI::ValidationError("--trace-steps", fmt::format("'{}' is not N or A:B with 0 <= A <= B", text));
  if (w.steps() > TraceWindow::kMaxSteps)
    throw CLI::ValidationError("--trace-steps", fmt::format("'{}' covers {} steps, at most {} are kept", text, w.steps(),
                                                            TraceWindow::kMaxSteps));
  return w;
}

}  // namespace gradsync
