#include "cpu/native_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

// Compiled for plain x86-64 whatever the build's flags (cpu/CMakeLists.txt): it runs before anything else and
// must run on every CPU.
namespace gradsync {
namespace native_detail {
extern const char kBuiltFeatures[];
}

namespace {

#if defined(__x86_64__)
// __builtin_cpu_supports takes a literal: one entry per feature native_features.cpp can record.
#define GRADSYNC_FEATURE(name) \
  if (__builtin_cpu_supports(name)) have.emplace_back(name)
std::vector<std::string> cpu_features() {
  __builtin_cpu_init();
  std::vector<std::string> have;
  GRADSYNC_FEATURE("sse3");
  GRADSYNC_FEATURE("ssse3");
  GRADSYNC_FEATURE("sse4.1");
  GRADSYNC_FEATURE("sse4.2");
  GRADSYNC_FEATURE("popcnt");
  GRADSYNC_FEATURE("aes");
  GRADSYNC_FEATURE("pclmul");
  GRADSYNC_FEATURE("avx");
  GRADSYNC_FEATURE("avx2");
  GRADSYNC_FEATURE("fma");
  GRADSYNC_FEATURE("f16c");
  GRADSYNC_FEATURE("bmi");
  GRADSYNC_FEATURE("bmi2");
  GRADSYNC_FEATURE("avx512f");
  GRADSYNC_FEATURE("avx512cd");
  GRADSYNC_FEATURE("avx512dq");
  GRADSYNC_FEATURE("avx512bw");
  GRADSYNC_FEATURE("avx512vl");
  GRADSYNC_FEATURE("avx512vnni");
  GRADSYNC_FEATURE("avx512bf16");
  GRADSYNC_FEATURE("avx512vbmi");
  GRADSYNC_FEATURE("avx512ifma");
  GRADSYNC_FEATURE("gfni");
  GRADSYNC_FEATURE("vpclmulqdq");
  return have;
}
#undef GRADSYNC_FEATURE
#else
std::vector<std::string> cpu_features() { return {}; }
#endif

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : " ") + name;
  return out;
}

// Runs before every other constructor of the binary (priority 101 is the first an application may use).
__attribute__((constructor(101))) void check_native_build() {
  const std::vector<std::string> missing = missing_features(built_features(), cpu_features());
  if (missing.empty()) return;
  char name[64] = "gradsync";
  if (FILE* comm = std::fopen("/proc/self/comm", "r")) {
    if (std::fgets(name, sizeof name, comm)) name[std::strcspn(name, "\n")] = '\0';
    std::fclose(comm);
  }
  std::fprintf(stderr,
               "%s: built with GRADSYNC_NATIVE=ON for a CPU with %s, which this CPU lacks; rebuild with "
               "-DGRADSYNC_NATIVE=OFF (the portable build) to run here\n",
               name, joined(missing).c_str());
  std::_Exit(1);
}

}  // namespace

std::vector<std::string> missing_features(const std::vector<std::string>& built, const std::vector<std::string>& cpu) {
  std::vector<std::string> missing;
  for (const std::string& feature : built)
    if (std::find(cpu.begin(), cpu.end(), feature) == cpu.end()) missing.push_back(feature);
  return missing;
}

std::vector<std::string> built_features() {
  std::vector<std::string> names;
  std::istringstream in(native_detail::kBuiltFeatures);
  for (std::string name; in >> name;) names.push_back(name);
  return names;
}

bool native_build_checked() { return true; }

}  // namespace gradsync
