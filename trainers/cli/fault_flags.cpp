#include "trainers/cli/fault_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace gradsync {

void add_fault_options(CLI::App& app, FaultInjection& f, FaultFlags& raw) {
  app.add_option("--straggler", raw.straggler,
                 "RANK:MS: that rank sleeps MS milliseconds every step; random:MS: each step one worker, drawn from the "
                 "seed, does");
  app.add_option("--inject-pause", raw.pause,
                 "testing: STEP:SECONDS[:RANK], every worker (or that rank alone) sleeps after STEP global steps")
      ->group("");
  app.add_option("--inject-kill", raw.kill,
                 "testing: STEP:RANK[:checkpoint][,...], that world rank SIGKILLs itself as global step STEP begins "
                 "(with :checkpoint, in the middle of writing the checkpoint set of step STEP)")
      ->group("");
  app.add_option("--inject-nan-step", f.nan_step, "testing: the last rank's gradient turns NaN at this step")->group("");
}

void take_faults(const FaultFlags& raw, FaultInjection& f) {
  if (!raw.pause.empty()) {
    char tail = 0;
    const char* text = raw.pause.c_str();
    int rank = -1;
    const bool with_rank = std::sscanf(text, "%ld:%lf:%d%c", &f.pause_step, &f.pause_s, &rank, &tail) == 3;
    const bool parsed = (with_rank && rank >= 0) || std::sscanf(text, "%ld:%lf%c", &f.pause_step, &f.pause_s, &tail) == 2;
    f.pause_rank = with_rank ? rank : -1;
    if (!parsed || f.pause_step < 0 || !(f.pause_s >= 0))
      throw CLI::ValidationError("--inject-pause",
                                 fmt::format("'{}' is not STEP:SECONDS or STEP:SECONDS:RANK", raw.pause));
  }
  for (std::size_t begin = 0; begin < raw.kill.size();) {
    const std::size_t comma = std::min(raw.kill.find(',', begin), raw.kill.size());
    const std::string item = raw.kill.substr(begin, comma - begin);
    FaultInjection::Kill k;
    int used = 0;
    constexpr std::string_view kInCheckpoint = ":checkpoint";
    const bool parsed = std::sscanf(item.c_str(), "%ld:%d%n", &k.step, &k.rank, &used) == 2;
    const std::string_view rest = parsed ? std::string_view(item).substr(static_cast<std::size_t>(used)) : "";
    k.in_checkpoint = rest == kInCheckpoint;
    if (!parsed || (!rest.empty() && !k.in_checkpoint) || k.step < 0 || k.rank < 0)
      throw CLI::ValidationError("--inject-kill",
                                 fmt::format("'{}' is not STEP:RANK or STEP:RANK:checkpoint (e.g. 30:2)", item));
    f.kills.push_back(k);
    begin = comma + 1;
  }
  if (raw.straggler.empty()) return;
  int rank = -1;
  double ms = -1;
  char tail = 0;
  if (std::sscanf(raw.straggler.c_str(), "random:%lf%c", &ms, &tail) == 1 && ms >= 0)
    rank = FaultInjection::kRandomStraggler;
  else if (std::sscanf(raw.straggler.c_str(), "%d:%lf%c", &rank, &ms, &tail) != 2 || rank < 0 || !(ms >= 0))
    throw CLI::ValidationError("--straggler", fmt::format("'{}' is not RANK:MS or random:MS (e.g. 3:5)", raw.straggler));
  f.straggler_rank = rank;
  f.straggler_ms = ms;
}

}  // namespace gradsync
