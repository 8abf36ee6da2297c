#pragma once
// The benchmark binaries' command lines. In bench/ only this folder includes CLI11, and bench/CMakeLists.txt
// compiles it as one translation unit, so CLI11's code is compiled once for all of them rather than once per binary.
#include <CLI/CLI.hpp>
#include <optional>

namespace gradsync::bench {

// Parses argc/argv into the options `app` declares. Every rank calls it with the same arguments and gets the same
// answer; only `lead` prints. Returns std::nullopt to go on, or the code to leave with: 0 after printing --help to
// stdout, 2 after printing "<tool>: error: <what>" to stderr (docs/reference.md, exit codes).
std::optional<int> parse_command_line(CLI::App& app, const char* tool, int argc, char** argv, bool lead);

}  // namespace gradsync::bench
