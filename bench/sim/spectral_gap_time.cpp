// The CPU time of gradsync::spectral_gap (collectives/topology.cpp), which train's rank 0 computed alone between its
// last collective and the start of the epoch's clock. Thread CPU time, as SMPI times a computation burst.
// Built against a native build's libraries (the command is in plots/results/sim-gossip-fattree/README.md, which
// holds its output).
#include <time.h>

#include <cstdio>
#include <cstdlib>

#include "collectives/topology.hpp"

static double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int main() {
  std::printf("topology,p,spectral_gap,cpu_s\n");
  for (const char* name : {"ring", "exp1", "torus", "exp"})
    for (int p : {64, 128, 256}) {
      const gradsync::TopologyInfo* t = gradsync::find_topology(name);
      if (t == nullptr) return 1;
      const double t0 = cpu_s();
      const double gap = gradsync::spectral_gap(t->id, p);
      std::printf("%s,%d,%.6f,%.4f\n", name, p, gap, cpu_s() - t0);
    }
  return 0;
}
