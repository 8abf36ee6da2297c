// neighbour_exchange: synchronous gossip's communication alone, under smpirun (SimGrid only: it calls
// smpi_execute_benched). Each iteration posts the receives from the peers, then the sends of one vector to each, and
// waits, as collectives/gossip_exchange.cpp does a step. Two timings of the same loop, written as one CSV row by
// rank 0:
//   aligned   after a barrier: the slowest rank's time, over the iterations (what the pattern costs);
//   skewed    rank 0 first computes --skew seconds (simulated), then every rank times the loop from its own start,
//             as train timed an epoch: rank 0's own time, and the slowest rank's own time.
// Simulated computation is smpi_execute_benched: plain smpi_execute leaves SMPI's burst timer running while the rank
// waits, and the next MPI call charges the rank the CPU time the simulator spent on every other rank meanwhile
// (0.78 s asked for took 0.96 s at 256 ranks).
// Usage: neighbour_exchange [--bytes N] [--iters N] [--pattern ring|shift|pair] [--tags same|distinct]
//                           [--wait all|test] [--skew SECONDS] [--csv FILE]
//   ring   both neighbours (rank +- 1: gossip on the ring); shift: to rank + 1, from rank - 1; pair: rank XOR 1
//   tags   same: one tag for every message (gossip_exchange's); distinct: one tag per direction
//   wait   all: MPI_Waitall; test: MPI_Testall every 10 us of simulated computation (the backward pass's kernels)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  long bytes = 407080;  // MLP-128's parameters, 101,770 floats
  int iters = 20;
  std::string pattern = "ring";
  std::string tags = "same";
  std::string wait = "all";
  double skew = 0;
  std::string csv;
};

[[noreturn]] void usage(const char* problem) {
  std::fprintf(stderr, "neighbour_exchange: %s\n", problem);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(("no value after " + flag).c_str());
    const char* v = argv[++i];
    if (flag == "--bytes")
      o.bytes = std::atol(v);
    else if (flag == "--iters")
      o.iters = std::atoi(v);
    else if (flag == "--pattern")
      o.pattern = v;
    else if (flag == "--tags")
      o.tags = v;
    else if (flag == "--wait")
      o.wait = v;
    else if (flag == "--skew")
      o.skew = std::atof(v);
    else if (flag == "--csv")
      o.csv = v;
    else
      usage(("unknown flag " + flag).c_str());
  }
  if (o.bytes < 4 || o.bytes % 4 != 0 || o.iters < 1 || o.skew < 0)
    usage("--bytes: a multiple of 4; --iters >= 1; --skew >= 0");
  if (o.pattern != "ring" && o.pattern != "shift" && o.pattern != "pair") usage("--pattern: ring, shift or pair");
  if (o.tags != "same" && o.tags != "distinct") usage("--tags: same or distinct");
  if (o.wait != "all" && o.wait != "test") usage("--wait: all or test");
  return o;
}

// One message of the pattern: to (or from) `rank` with `tag`.
struct Peer {
  int rank, tag;
};

// Whom this rank receives from and sends to. With distinct tags a message's tag is its direction (1: to the right,
// 2: to the left), so the receive from the left neighbour expects 1.
void peers_of(const Options& o, int me, int p, std::vector<Peer>& from, std::vector<Peer>& to) {
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  const bool distinct = o.tags == "distinct";
  if (o.pattern == "ring") {
    from = {{left, distinct ? 1 : 0}, {right, distinct ? 2 : 0}};
    to = {{left, distinct ? 2 : 0}, {right, distinct ? 1 : 0}};
  } else if (o.pattern == "shift") {
    from = {{left, distinct ? 1 : 0}};
    to = {{right, distinct ? 1 : 0}};
  } else {
    from = to = {{me ^ 1, 0}};
  }
}

void exchange(const Options& o, const std::vector<Peer>& from, const std::vector<Peer>& to, std::vector<float>& inbox,
              const std::vector<float>& mine) {
  const int n = static_cast<int>(mine.size());
  std::vector<MPI_Request> req(from.size() + to.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < from.size(); ++i)
    MPI_Irecv(inbox.data() + i * mine.size(), n, MPI_FLOAT, from[i].rank, from[i].tag, MPI_COMM_WORLD, &req[i]);
  for (std::size_t i = 0; i < to.size(); ++i)
    MPI_Isend(mine.data(), n, MPI_FLOAT, to[i].rank, to[i].tag, MPI_COMM_WORLD, &req[from.size() + i]);
  if (o.wait == "all") {
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    return;
  }
  int done = 0;
  for (;;) {
    MPI_Testall(static_cast<int>(req.size()), req.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    smpi_execute_benched(1e-5);
  }
}

struct Times {
  double aligned, rank0, slowest;  // seconds per iteration
};

Times run(const Options& o, int me, int p) {
  std::vector<Peer> from, to;
  peers_of(o, me, p, from, to);
  std::vector<float> mine(static_cast<std::size_t>(o.bytes / 4), 1.0f), inbox(from.size() * mine.size());
  Times t{};
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) exchange(o, from, to, inbox, mine);
  double own = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &own, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  t.aligned = own / o.iters;

  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0 && o.skew > 0) smpi_execute_benched(o.skew);  // as train's rank 0 computed the graph's spectral gap
  start = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) exchange(o, from, to, inbox, mine);
  own = MPI_Wtime() - start;
  t.rank0 = own / o.iters;
  MPI_Allreduce(MPI_IN_PLACE, &own, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  t.slowest = own / o.iters;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const Options o = parse(argc, argv);
  if (o.pattern == "pair" && p % 2 != 0) usage("--pattern pair needs an even number of ranks");
  const Times t = run(o, me, p);
  if (me == 0) {
    char row[512];
    std::snprintf(row, sizeof row, "%d,%ld,%s,%s,%s,%g,%d,%.9f,%.9f,%.9f\n", p, o.bytes, o.pattern.c_str(),
                  o.tags.c_str(), o.wait.c_str(), o.skew, o.iters, t.aligned, t.rank0, t.slowest);
    std::fputs(row, stdout);
    if (!o.csv.empty()) {
      FILE* f = std::fopen(o.csv.c_str(), "a");
      if (f == nullptr) usage(("cannot open " + o.csv).c_str());
      std::fputs(row, f);
      std::fclose(f);
    }
  }
  MPI_Finalize();
  return 0;
}
