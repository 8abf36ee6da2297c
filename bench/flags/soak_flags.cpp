#include "bench/flags/soak_flags.hpp"

#include "bench/flags/command_line.hpp"

namespace gradsync::bench {

std::optional<int> parse_soak_flags(int argc, char** argv, bool lead, SoakFlags& f) {
  CLI::App app{"soak: many randomly shaped allreduce calls (sizes, methods, chunks, types), each checked exactly"};
  app.add_option("--calls", f.calls, "allreduce calls to make")->capture_default_str();
  app.add_option("--seed", f.seed, "seed of the shared random sequence (same on every rank)")->capture_default_str();
  app.add_option("--max-count", f.max_count, "largest call, in elements")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 31));  // MPI counts are ints; the buffer is 8 B a count
  app.add_option("--methods", f.methods, "comma-separated subset of the exact methods")->capture_default_str();
  app.add_option("--progress-every", f.progress_every, "print a progress line every this many calls (0: never)")
      ->capture_default_str();
  app.add_flag("--trace", f.trace, "rank 0 prints each call before making it (names the call a crash or hang is in)");
  return parse_command_line(app, "soak", argc, argv, lead);
}

}  // namespace gradsync::bench
