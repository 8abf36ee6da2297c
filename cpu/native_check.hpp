#pragma once
// A build with GRADSYNC_NATIVE=ON is compiled for the CPU that built it, and may carry that CPU's instructions
// anywhere, static initializers included. Before any of them runs (a constructor of the highest priority), the
// check compares the features the build was compiled with against this CPU's and, if one is missing, prints one
// line naming the program, the missing features and the fix, and exits with status 1: never an illegal
// instruction. A portable build passes the check on every x86-64 CPU.
#include <string>
#include <vector>

namespace gradsync {

// The features of `built` (names as __builtin_cpu_supports spells them) that are not in `cpu`.
std::vector<std::string> missing_features(const std::vector<std::string>& built, const std::vector<std::string>& cpu);

// The features this binary was compiled to require beyond plain x86-64 (empty for a portable build).
std::vector<std::string> built_features();

// Links the check into every binary that dispatches (cpu/isa.cpp calls it); the check itself has run by then.
bool native_build_checked();

}  // namespace gradsync
