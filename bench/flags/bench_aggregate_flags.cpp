#include "bench/flags/bench_aggregate_flags.hpp"

#include <fmt/format.h>

#include "bench/flags/command_line.hpp"
#include "collectives/robust/aggregator_spec.hpp"

namespace gradsync::bench {

std::optional<int> parse_aggregate_flags(int argc, char** argv, bool lead, AggregateFlags& f) {
  CLI::App app{
      "bench_aggregate: time per robust aggregation, segmented and gathered to one rank, against the ring "
      "allreduce, with a check per row"};
  app.add_option("--aggregators", f.aggregators,
                 fmt::format("comma-separated aggregators ({}); a parameter left out is --byzantine", aggregator_names()))
      ->capture_default_str();
  app.add_option("--forms", f.forms,
                 "segmented (all-to-all of segments, the ring's bytes; row 'agg-NAME'), gathered (every vector to "
                 "rank 0; row 'agg-NAME-gather'), or both")
      ->capture_default_str();
  app.add_option("--byzantine", f.byzantine,
                 "F: the aggregators' default F (or B), and how many ranks, the last ones, send outlying inputs")
      ->capture_default_str();
  app.add_flag("--no-ring", f.no_ring, "leave out the ring allreduce's row");
  app.add_option("--min-bytes", f.min_bytes, "smallest vector (e.g. 4K, 1M)")->capture_default_str();
  app.add_option("--max-bytes", f.max_bytes, "largest vector")->capture_default_str();
  app.add_option("--step-factor", f.step_factor, "multiply the size by this each row")->capture_default_str();
  app.add_option("--reps", f.reps, "timed calls per row, each on fresh inputs; the median is reported")
      ->capture_default_str();
  app.add_option("--warmup", f.warmup, "untimed calls per row after the check")->capture_default_str();
  app.add_flag("--no-check", f.no_check, "skip each row's check (the wrong column says -1)");
  app.add_option("--csv", f.csv, "also write the rows to this CSV file (bench_allreduce's columns)");
  return parse_command_line(app, "bench_aggregate", argc, argv, lead);
}

}  // namespace gradsync::bench
