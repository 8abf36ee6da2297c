#include "trainers/cli/spec_flags.hpp"

#include <fmt/format.h>

#include <optional>

namespace gradsync {

void add_spec_options(CLI::App& app, SpecFlags& f) {
  app.add_option("--spec", f.spec,
                 fmt::format("the synchronization as one word, as the bench drivers take runs (instead of the flags "
                             "it sets, which are refused beside it): {}. E.g. ps+mode=ssp+staleness=2, "
                             "gossip+topology=exp1+async, ring+average=8+outer-lr=0.7+outer-momentum=0.9",
                             sync_spec_grammar()));
  app.add_flag("--print-run", f.print_run,
               "print the run's name (the CSVs' sync and method columns) and the fewest ranks train accepts these "
               "flags on, tab-separated, and exit: no MPI, no data");
}

SyncSpec take_spec(const CLI::App& app, const SpecFlags& f) {
  std::string problem;
  std::optional<SyncSpec> spec = parse_sync_spec(f.spec, problem);
  if (!spec) throw CLI::ValidationError("--spec", problem);
  for (std::string_view flag : sync_spec_flags())
    if (app.count(std::string(flag)) > 0)
      throw CLI::ValidationError("--spec", fmt::format("not with {}: the spec sets it (its method, or a modifier of "
                                                       "--help's --spec list); spell the whole synchronization in it",
                                                       flag));
  return *std::move(spec);
}

}  // namespace gradsync
