// doctest under MPI: every rank runs every test case in the same order (collective tests depend on it). Rank 0
// prints doctest's normal report; the others print only their failures. A test case counts as failed if it
// failed on any rank, and the exit code is non-zero on every rank if any rank failed anything.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>

#include <vector>

#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "trainers/agreed_kernel_plan.hpp"

namespace {

// Records pass/fail per test case, in the order the cases ran, so ranks can be compared case by case.
std::vector<int> g_case_failed;

struct CaseRecorder : doctest::IReporter {
  explicit CaseRecorder(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    g_case_failed.push_back(stats.testCaseSuccess ? 0 : 1);
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("gradsync_case_recorder", 1, CaseRecorder);

}  // namespace

int main(int argc, char** argv) {
  const gradsync::BlisConfig blis = gradsync::configure_blis(1);  // before MPI_Init: it forks
  // Serialized: an overlap run's communication thread makes MPI calls while this thread makes none.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every rank runs one kernel plan, here that of a default training run.
  gradsync::install_agreed_kernel_plan(gradsync::Comm::world(), gradsync::TrainConfig{});
  if (rank == 0) fmt::print("gradsync tests on {} rank(s); {}\n", size, gradsync::kernels_summary(blis));

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
  int cases = static_cast<int>(g_case_failed.size()), max_cases = 0, min_cases = 0;
  MPI_Allreduce(&cases, &max_cases, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&cases, &min_cases, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  g_case_failed.resize(static_cast<std::size_t>(max_cases), 1);
  std::vector<int> any_failed(g_case_failed.size(), 0);
  MPI_Allreduce(g_case_failed.data(), any_failed.data(), max_cases, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int failed = 0;
  for (int f : any_failed) failed += f;
  int local_bad = local != 0 ? 1 : 0, any_bad = 0;
  MPI_Allreduce(&local_bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const bool ok = failed == 0 && any_bad == 0 && min_cases == max_cases;
  if (rank == 0) {
    if (min_cases != max_cases)
      fmt::print("ranks ran different numbers of test cases ({} to {})\n", min_cases, max_cases);
    fmt::print("test cases over {} ranks: {} passed, {} failed\n", size, max_cases - failed, failed);
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
