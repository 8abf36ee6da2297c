#include <blis.h>
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/kernels/blis_arch.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "test_support.hpp"

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

TEST_CASE("this process does not run BLIS's generic kernels on an AVX2+FMA CPU" * doctest::test_suite("needs_avx2")) {
  const CpuFeatures cpu = host_cpu_features();
  SKIP_UNLESS(cpu.avx2 && cpu.fma, "this CPU has no AVX2 and FMA: BLIS's generic kernels are its only ones");
  const std::string arch = bli_arch_string(bli_arch_query_id());
  CHECK(arch != "generic");
  MESSAGE("BLIS runs " << arch);
}

TEST_CASE("AVX-512 kernels are candidates only on a CPU with AVX-512, the AVX2 sets only with AVX2 and FMA") {
  CpuFeatures zen4{true, true, true, true, true};
  CHECK(candidate_kernel_sets(zen4) == std::vector<std::string>{"skx", "zen3", "zen2", "zen", "haswell"});
  CpuFeatures intel_avx2{true, false, true, true, false};
  CHECK(candidate_kernel_sets(intel_avx2) == std::vector<std::string>{"haswell", "zen3", "zen2", "zen"});
  CHECK(candidate_kernel_sets(CpuFeatures{true, true, true, false, false}).empty());
  CHECK(candidate_kernel_sets(CpuFeatures{false, false, false, false, false}).empty());
}

TEST_CASE("a user's BLIS_ARCH_TYPE is kept, and no other kernel set is probed for a plan" *
          doctest::test_suite("needs_avx2")) {
  const BlisConfig& blis = configured_blis();
  const CpuFeatures cpu = host_cpu_features();
  SKIP_UNLESS(blis.user_arch || (cpu.avx2 && cpu.fma),
              "no BLIS_ARCH_TYPE and no AVX2 and FMA: no kernel set to keep or probe");
  if (blis.user_arch) {
    CHECK(blis.kernel_sets.empty());
    CHECK(blis.reason.find("set by the user") != std::string::npos);
  } else {
    CHECK(!blis.kernel_sets.empty());
  }
  MESSAGE(kernels_summary(blis));
}

TEST_CASE("a kernel set's name in BLIS_ARCH_TYPE becomes its index; a number stays; anything else is refused") {
  for (int i = 0; i < BLIS_NUM_ARCHS; ++i) {
    const std::string name = bli_arch_string(static_cast<arch_t>(i));
    CAPTURE(name);
    CHECK(blis_arch_env_value(name) == std::to_string(i));
  }
  CHECK(blis_arch_env_value("6") == "6");
  CHECK_FALSE(blis_arch_env_value("zen9"));
  CHECK_FALSE(blis_arch_env_value(""));
  CHECK_FALSE(blis_arch_env_value("-1"));
}
