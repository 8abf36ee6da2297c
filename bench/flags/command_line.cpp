#include "bench/flags/command_line.hpp"

#include <fmt/format.h>

namespace gradsync::bench {

std::optional<int> parse_command_line(CLI::App& app, const char* tool, int argc, char** argv, bool lead) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help: CLI11 signals it with an exception of code 0
      if (lead) app.exit(e);
      return 0;
    }
    if (lead) fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 2;
  }
}

}  // namespace gradsync::bench
