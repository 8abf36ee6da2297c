// doctest under MPI: every rank runs every test case in the same order (collective tests depend on it). Rank 0
// prints doctest's normal report; the others print only their failures. A test case counts as failed if it
// failed on any rank, and the exit code is non-zero on every rank if any rank failed anything. A case that left
// through SKIP_UNLESS (tests/test_support.hpp) counts as skipped, not passed: rank 0 lists each with its reason,
// and where every case the filters selected was skipped the exit code is 77, which ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "test_support.hpp"
#ifndef GRADSYNC_COLLECTIVES_GRID_ONLY  // gradsync_grid_tests (tests/CMakeLists.txt): the collectives' cases alone
#include "cpu/isa.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#endif

namespace {

// What became of a test case on one rank; over ranks the largest counts (failed on any rank is failed).
enum Outcome : int { kPassed = 0, kSkipped = 1, kFailed = 2 };

// The exit code of a run in which every selected case was skipped: ctest's SKIP_RETURN_CODE (tests/CMakeLists.txt),
// the Automake convention.
constexpr int kAllSkipped = 77;

struct CaseRecord {
  std::string name;
  std::string skip_reason;  // "" unless skipped
  int outcome = kPassed;
};

// Every test case in the order the cases ran, so ranks can be compared case by case.
std::vector<CaseRecord> g_cases;

struct CaseRecorder : doctest::IReporter {
  explicit CaseRecorder(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    name_ = tc.m_name;
    gradsync::test::begin_case();
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    CaseRecord record{name_, gradsync::test::end_case(), kPassed};
    if (!stats.testCaseSuccess)
      record.outcome = kFailed;
    else if (!record.skip_reason.empty())
      record.outcome = kSkipped;
    g_cases.push_back(std::move(record));
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::string name_;
};
REGISTER_LISTENER("gradsync_case_recorder", 1, CaseRecorder);

}  // namespace

int main(int argc, char** argv) {
#ifndef GRADSYNC_COLLECTIVES_GRID_ONLY
  // An entry that forces an instruction set this CPU lacks (unit_isa_avx2_mpi4 on a CPU without AVX2) is a
  // precondition this machine lacks: skipped, not failed.
  if (const char* forced = std::getenv(std::string(gradsync::kIsaVariable).c_str())) {
    const auto isa = gradsync::isa_from_name(forced);
    if (isa && *isa > gradsync::cpu_isa()) {
      fmt::print("skipped: every case [{}={}: this CPU runs at most {}]\n", gradsync::kIsaVariable, forced,
                 gradsync::isa_name(gradsync::cpu_isa()));
      return kAllSkipped;
    }
  }
  gradsync::refuse_bad_isa_request("gradsync_tests");
  const gradsync::BlisConfig blis = gradsync::configure_blis(1);  // before MPI_Init: it forks
#endif
  // Serialized: an overlap run's communication thread makes MPI calls while this thread makes none.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifndef GRADSYNC_COLLECTIVES_GRID_ONLY
  // Every rank runs one kernel plan, here that of a default training run.
  gradsync::install_agreed_kernel_plan(gradsync::Comm::world(), gradsync::TrainConfig{});
  if (rank == 0) fmt::print("gradsync tests on {} rank(s); {}\n", size, gradsync::kernels_summary(blis));
#else
  if (rank == 0) fmt::print("gradsync collectives grid on {} rank(s)\n", size);
#endif

  doctest::Context context(argc, argv);
  if (rank != 0) context.setOption("minimal", true);
  // mpirun forwards output through a pty, so doctest would colour it even in logs: opt in instead.
  if (std::getenv("GRADSYNC_TEST_COLORS") == nullptr) context.setOption("no-colors", true);
  const int local = context.run();
  if (context.shouldExit()) {
    MPI_Finalize();
    return local;
  }

  // Cases ran in the same order everywhere; a rank whose case count differs is itself a failure.
  int cases = static_cast<int>(g_cases.size()), max_cases = 0, min_cases = 0;
  gradsync::check_mpi(MPI_Allreduce(&cases, &max_cases, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce", rank);
  gradsync::check_mpi(MPI_Allreduce(&cases, &min_cases, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce", rank);
  std::vector<int> outcome(static_cast<std::size_t>(max_cases), kFailed), agreed(outcome.size(), kFailed);
  for (std::size_t i = 0; i < g_cases.size(); ++i) outcome[i] = g_cases[i].outcome;
  gradsync::check_mpi(MPI_Allreduce(outcome.data(), agreed.data(), max_cases, MPI_INT, MPI_MAX, MPI_COMM_WORLD),
                      "MPI_Allreduce", rank);
  int failed = 0, skipped = 0;
  for (int o : agreed) {
    failed += o == kFailed ? 1 : 0;
    skipped += o == kSkipped ? 1 : 0;
  }
  int local_bad = local != 0 ? 1 : 0, any_bad = 0;
  gradsync::check_mpi(MPI_Allreduce(&local_bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce", rank);
  const bool ok = failed == 0 && any_bad == 0 && min_cases == max_cases && max_cases > 0;
  if (rank == 0) {
    for (std::size_t i = 0; i < agreed.size(); ++i)
      if (agreed[i] == kSkipped && i < g_cases.size())
        fmt::print("skipped: {} [{}]\n", g_cases[i].name,
                   g_cases[i].skip_reason.empty() ? "skipped on another rank" : g_cases[i].skip_reason);
    if (min_cases != max_cases)
      fmt::print("ranks ran different numbers of test cases ({} to {})\n", min_cases, max_cases);
    // An entry whose filters match nothing would pass without checking anything.
    if (max_cases == 0) fmt::print("no test case matched the filters\n");
    fmt::print("test cases over {} ranks: {} passed, {} skipped, {} failed\n", size, max_cases - failed - skipped,
               skipped, failed);
  }
  MPI_Finalize();
  if (!ok) return 1;
  return skipped == max_cases ? kAllSkipped : 0;
}
