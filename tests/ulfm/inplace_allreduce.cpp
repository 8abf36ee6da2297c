// In-place recovery of the collectives under ULFM: every rank runs `--calls` allreduces of `--count` floats with each
// method named by --methods; at call --kill-at the ranks named by --victims (world ranks) SIGKILL themselves, in the
// middle of the call (after posting their first messages, so peers are blocked on them). The survivors must see a
// ProcessFailure from whatever call meets the failure, revoke, shrink, rebuild the method from the registry on the
// new communicator and redo the call; every result is checked exactly against the sum over the ranks alive at that
// call (each rank contributes (world rank + 1) * (index % 7 + 1), integers a float sums exactly). Prints one line
// per recovery (seconds from the failure to the redone call) and exits 0 only if every call was exact on every
// survivor and the survivors are the ranks expected. Exits 77 (a skip) with the reason when ULFM is not there.
// Usage: inplace_allreduce --methods ring,mpi --victims 2 [--kill-at 5] [--calls 12] [--count 100003]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"
#include "collectives/fault_tolerance.hpp"
#include "collectives/methods.hpp"
#include "collectives/mpi_session.hpp"

namespace {

using gradsync::Comm;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void fill(std::vector<float>& data, int world_rank) {
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((world_rank + 1) * (i % 7 + 1));
}

// The world ranks of `comm`'s members, in its order (every rank the same list).
std::vector<int> members(const Comm& comm, int world_rank) { return comm.all_gather(std::vector<int>{world_rank}); }

// Counts the elements of `data` that differ from the sum over `alive` (world ranks).
long wrong(const std::vector<float>& data, const std::vector<int>& alive) {
  long bad = 0;
  long weight = 0;
  for (const int r : alive) weight += r + 1;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data[i] != static_cast<float>(weight * static_cast<long>(i % 7 + 1))) ++bad;
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  gradsync::MpiSession mpi(argc, argv, MPI_THREAD_SINGLE);
  CLI::App app{"in-place recovery of the allreduce methods under ULFM"};
  std::string methods_text = "ring,mpi";
  std::vector<int> victims;
  int kill_at = 5, calls = 12;
  std::size_t count = 100003;
  app.add_option("--methods", methods_text, "allreduce methods, comma-separated");
  app.add_option("--victims", victims, "world ranks that kill themselves at --kill-at")->delimiter(',')->required();
  app.add_option("--kill-at", kill_at, "the call at which the victims die")->check(CLI::NonNegativeNumber);
  app.add_option("--calls", calls, "calls per method")->check(CLI::PositiveNumber);
  app.add_option("--count", count, "floats per call")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const int world_rank = mpi.world_rank();
  if (!gradsync::ulfm_enabled()) {
    if (world_rank == 0) fmt::print("skipped: {}\n", gradsync::ulfm_missing_reason());
    return 77;
  }
  std::vector<std::string> methods;
  for (auto begin = methods_text.begin(); begin != methods_text.end();) {
    const auto comma = std::find(begin, methods_text.end(), ',');
    methods.emplace_back(begin, comma);
    begin = comma == methods_text.end() ? comma : comma + 1;
  }
  const bool victim = std::ranges::find(victims, world_rank) != victims.end();
  // A survivor writing to a dead peer's TCP socket must get EPIPE, not the SIGPIPE that would kill it (MpiSession).
  struct sigaction pipe_action {};
  sigaction(SIGPIPE, nullptr, &pipe_action);
  const bool pipe_ignored = pipe_action.sa_handler == SIG_IGN;

  Comm comm = Comm::world();
  std::vector<float> data(count);
  long bad = 0;
  int recoveries = 0;
  for (const std::string& name : methods) {
    std::unique_ptr<gradsync::Allreduce> method = gradsync::make_allreduce(name, comm);
    std::vector<int> alive = members(comm, world_rank);
    for (int call = 0; call < calls;) {
      fill(data, world_rank);
      try {
        if (victim && call == kill_at && name == methods.front()) {
          method->start(std::span<float>(data));  // peers now wait on messages this rank will never finish
          std::fflush(stdout);
          raise(SIGKILL);
        }
        method->run(std::span<float>(data));
        bad += wrong(data, alive);
        ++call;
      } catch (const gradsync::ProcessFailure& failure) {
        const double t0 = now_s();
        gradsync::revoke_all();
        Comm survivors = gradsync::shrink(comm);
        method.reset();  // its requests and tags belong to the revoked communicator
        comm = survivors;
        method = gradsync::make_allreduce(name, comm);
        alive = members(comm, world_rank);
        const double seconds = comm.max(now_s() - t0);
        ++recoveries;
        if (comm.rank() == 0)
          fmt::print("{}: call {} lost a rank ({}); re-formed on {} ranks in {:.4f} s\n", name, call, failure.what(),
                     comm.size(), seconds);
      }
    }
  }
  const long all_bad = comm.sum(bad);
  const std::vector<int> alive = members(comm, world_rank);
  if (comm.rank() == 0) {
    std::vector<int> expected;
    for (int r = 0; r < mpi.world_size(); ++r)
      if (std::ranges::find(victims, r) == victims.end()) expected.push_back(r);
    fmt::print("survivors: {} (expected {}); wrong elements: {}; recoveries on rank {}: {}; SIGPIPE {}\n",
               fmt::join(alive, " "), fmt::join(expected, " "), all_bad, world_rank, recoveries,
               pipe_ignored ? "ignored" : "NOT ignored");
    if (alive != expected || all_bad != 0 || recoveries == 0 || !pipe_ignored) {
      gradsync::MpiSession::set_exit_code(1);
      return 1;
    }
  }
  return 0;
}
