#include <doctest/doctest.h>
#include <blis.h>

#include <string>
#include <vector>

#include "model/blis_setup.hpp"

using namespace gradsync;

TEST_CASE("an unrecognized AVX2+FMA CPU gets a real kernel set instead of generic") {
  const std::vector<std::string> runnable = {"haswell", "zen", "zen3"};
  CpuFeatures amd{true, true, true, true};
  CHECK(better_kernel_set("generic", amd, runnable) == "zen3");
  CpuFeatures intel{true, false, true, true};
  CHECK(better_kernel_set("generic", intel, runnable) == "haswell");
  const std::vector<std::string> only_zen = {"zen"};
  CHECK(better_kernel_set("generic", intel, only_zen) == "zen");
}

TEST_CASE("BLIS's own choice is kept when it recognized the CPU or the CPU lacks AVX2/FMA") {
  const std::vector<std::string> runnable = {"haswell", "zen3"};
  CHECK_FALSE(better_kernel_set("zen3", CpuFeatures{true, true, true, true}, runnable));
  CHECK_FALSE(better_kernel_set("generic", CpuFeatures{true, true, true, false}, runnable));
  CHECK_FALSE(better_kernel_set("generic", CpuFeatures{false, false, false, false}, runnable));
  CHECK_FALSE(better_kernel_set("generic", CpuFeatures{true, true, true, true}, {}));
}

TEST_CASE("this process does not run BLIS's generic kernels on an AVX2+FMA CPU") {
  const CpuFeatures cpu = host_cpu_features();
  const std::string arch = bli_arch_string(bli_arch_query_id());
  if (cpu.avx2 && cpu.fma) CHECK(arch != "generic");
  MESSAGE("BLIS runs " << arch);
}
