#include "bench/flags/bench_membw_flags.hpp"

#include "bench/flags/command_line.hpp"

namespace gradsync::bench {

std::optional<int> parse_membw_flags(int argc, char** argv, bool lead, MembwFlags& f) {
  CLI::App app{"bench_membw: aggregate memory bandwidth with all ranks running the same kernel"};
  app.add_option("--bytes", f.bytes, "array size per rank")->capture_default_str();
  app.add_option("--reps", f.reps, "repetitions (median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  return parse_command_line(app, "bench_membw", argc, argv, lead);
}

}  // namespace gradsync::bench
