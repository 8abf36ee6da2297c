// A stand-in for a GRADSYNC_NATIVE binary built on an AVX-512 CPU: compiled with -march=x86-64-v4 (its
// start-up check sees AVX-512 among the features it was built with) and executing AVX-512 instructions in main.
// On a CPU without AVX-512 the check must stop it with one line before main; on one with it, it runs.
#include <cstdio>

#include "cpu/native_check.hpp"

int main() {
  volatile float x[16] = {};
  float sum = 0;
  for (int i = 0; i < 16; ++i) sum += x[i] * 2.0f;  // vectorized for AVX-512 under -march=x86-64-v4
  std::printf("ran with AVX-512 (%g); built for %zu features\n", static_cast<double>(sum),
              gradsync::built_features().size());
  return 0;
}
