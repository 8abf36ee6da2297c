#include "cpu/native_check.hpp"

#include <errno.h>  // program_invocation_short_name (glibc)

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

// The check runs before anything else, in a binary whose other code may be compiled for another CPU: it calls no
// inline or template code from a header (the linker may keep another file's native copy of it), only builtins
// and C functions on fixed arrays.
#if defined(__x86_64__)
// __builtin_cpu_supports takes a literal: one entry per feature native_features.cpp can record.
#define GRADSYNC_FEATURE(name)                             \
  {                                                        \
    name, [] { return __builtin_cpu_supports(name) != 0; } \
  }
struct Feature {
  const char* name;
  bool (*supported)();
};
const Feature kFeatures[] = {
    GRADSYNC_FEATURE("sse3"),       GRADSYNC_FEATURE("ssse3"),      GRADSYNC_FEATURE("sse4.1"),
    GRADSYNC_FEATURE("sse4.2"),     GRADSYNC_FEATURE("popcnt"),     GRADSYNC_FEATURE("aes"),
    GRADSYNC_FEATURE("pclmul"),     GRADSYNC_FEATURE("avx"),        GRADSYNC_FEATURE("avx2"),
    GRADSYNC_FEATURE("fma"),        GRADSYNC_FEATURE("f16c"),       GRADSYNC_FEATURE("bmi"),
    GRADSYNC_FEATURE("bmi2"),       GRADSYNC_FEATURE("avx512f"),    GRADSYNC_FEATURE("avx512cd"),
    GRADSYNC_FEATURE("avx512dq"),   GRADSYNC_FEATURE("avx512bw"),   GRADSYNC_FEATURE("avx512vl"),
    GRADSYNC_FEATURE("avx512vnni"), GRADSYNC_FEATURE("avx512bf16"), GRADSYNC_FEATURE("avx512vbmi"),
    GRADSYNC_FEATURE("avx512ifma"), GRADSYNC_FEATURE("gfni"),       GRADSYNC_FEATURE("vpclmulqdq"),
};
#undef GRADSYNC_FEATURE
#endif

// True if this CPU has feature `name` (length `length`, not terminated); a name the table lacks counts as missing.
bool cpu_has(const char* name, std::size_t length) {
#if defined(__x86_64__)
  for (const Feature& f : kFeatures)
    if (std::strlen(f.name) == length && std::strncmp(f.name, name, length) == 0) return f.supported();
#endif
  (void)name;
  (void)length;
  return false;
}

// Runs before every other constructor of the binary (priority 101 is the first an application may use).
__attribute__((constructor(101))) void check_native_build() {
#if defined(__x86_64__)
  __builtin_cpu_init();
#endif
  char missing[512] = "";
  std::size_t used = 0;
  for (const char* p = native_detail::kBuiltFeatures; *p;) {
    while (*p == ' ') ++p;
    const std::size_t length = std::strcspn(p, " ");
    if (length > 0 && !cpu_has(p, length) && used + length + 2 < sizeof missing) {
      if (used > 0) missing[used++] = ' ';
      std::memcpy(missing + used, p, length);
      used += length;
      missing[used] = '\0';
    }
    p += length;
  }
  if (used == 0) return;
  std::fprintf(stderr,
               "%s: built with GRADSYNC_NATIVE=ON for a CPU with %s, which this CPU lacks; rebuild with "
               "-DGRADSYNC_NATIVE=OFF (the portable build) to run here\n",
               program_invocation_short_name, missing);
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
