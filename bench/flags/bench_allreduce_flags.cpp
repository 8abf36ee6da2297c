#include "bench/flags/bench_allreduce_flags.hpp"

#include <fmt/format.h>

#include "bench/flags/command_line.hpp"
#include "collectives/methods.hpp"

namespace gradsync::bench {

std::optional<int> parse_allreduce_flags(int argc, char** argv, bool lead, AllreduceFlags& f) {
  CLI::App app{"bench_allreduce: time and bandwidth of every allreduce method, with an exact check per row"};
  app.add_option(
         "--methods", f.methods,
         fmt::format("comma-separated: {} (--list-methods says what each is; a rounded method's algbw and busbw "
                     "count float32 bytes, more than it sends); a method's own options follow its name as ':key=value' "
                     "(hier:ranks_per_host=2); a '+nocheck' suffix skips the agreement check, '+wN' "
                     "runs the ring with N exchanges in flight; "
                     "membound times the DRAM traffic a ring allreduce cannot avoid (bench/memory_bound.hpp), xcore "
                     "the ring's schedule with plain loads and stores through a shared window "
                     "(bench/cross_core_bound.hpp), at the same moments",
                     allreduce_method_names([](const AllreduceMethod&) { return true; })))
      ->capture_default_str();
  app.add_flag("--list-methods", f.list_methods,
               "print every method, one a line: name, properties, summary, own options (tab-separated), and exit");
  app.add_option("--min-bytes", f.min_bytes, "smallest message (e.g. 4, 1K, 1M)")->capture_default_str();
  app.add_option("--max-bytes", f.max_bytes, "largest message")->capture_default_str();
  app.add_option("--step-factor", f.step_factor, "multiply the size by this each row")->capture_default_str();
  app.add_option("--iters", f.iters,
                 "timed iterations per row (0: enough to move ~1 GiB, 5..2000; a simulation build's defaults for "
                 "--iters, --warmup and --reps are 1)")
      ->capture_default_str();
  app.add_option("--warmup", f.warmup, "untimed iterations per row")->capture_default_str();
  app.add_option("--reps", f.reps, "timed blocks per row, methods interleaved; the median is reported")
      ->capture_default_str();
  app.add_option("--chunk-bytes", f.chunks,
                 "ring chunk size; a comma-separated list sweeps it (default: 1 MiB on one node, 16 MiB across hosts)");
  app.add_option(
      "--segment-bytes", f.segment,
      "largest message of a pairwise exchange (rd, rhd, a ring of two), or 'whole' (default: whole on one node, "
      "32 KiB across hosts)");
  app.add_option("--servers", f.servers, "ps-sharded: server ranks (default: np/2)");
  app.add_flag("--no-agreement-check", f.no_check, "skip the per-call size agreement check (to measure its cost)");
  app.add_flag("--shared-buffers", f.shared_buffers,
               "simulation builds only: every rank's buffer and the collectives' scratch are one SMPI shared "
               "allocation, so that 1024 simulated ranks fit in memory; the sums are then meaningless and not "
               "checked (the wrong column says -1)");
  app.add_option("--csv", f.csv, "also write the rows to this CSV file");
  app.add_option("--link-gbps", f.link_gbps,
                 "the link's rate in Gbit/s: the end says each method's best bus bandwidth as a share of it (with "
                 "membound among the methods, also as a share of the measured memory bound)");
  app.add_flag("--explain", f.explain, "at the end, auto's choices: every candidate's prediction and the measured time");
  const std::optional<int> done = parse_command_line(app, "bench_allreduce", argc, argv, lead);
  if (!done) f.settings = flag_settings(app);
  return done;
}

}  // namespace gradsync::bench
