#include "trainers/loop/agreed_kernel_plan.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "model/kernels/agreement.hpp"
#include "model/model.hpp"

namespace gradsync {
namespace {

// A rank's RankKernels line is a few set names long; one that would not fit is sent empty, which rank 0 refuses.
constexpr std::size_t kLine = 512;

// Rank 0's decision from every rank's kernel sets (`lines`, kLine characters each), or what stopped it:
// "plan\n# <source>\n<plan text>" or "error\n<message>". Never throws: the other ranks wait for this text.
std::string decide(const std::vector<char>& lines, int ranks, std::span<const GemmShape> shapes, const BlisConfig& blis,
                   const KernelPlanMaker& make) {
  try {
    std::vector<RankKernels> kernels;
    for (int r = 0; r < ranks; ++r) {
      const auto k = RankKernels::from_text(lines.data() + static_cast<std::size_t>(r) * kLine);
      if (!k) throw std::invalid_argument(fmt::format("rank {} sent an unreadable list of kernel sets", r));
      kernels.push_back(*k);
    }
    const KernelPlan plan = agree_kernel_plan(kernels, [&] { return make(shapes, blis); });
    return "plan\n# " + plan.source + "\n" + plan.to_text();
  } catch (const std::exception& e) {
    return std::string("error\n") + e.what();
  } catch (...) {  // whatever `make` throws, the other ranks must not be left waiting
    return "error\nrank 0 failed to make a plan";
  }
}

// Installs the plan in rank 0's `text` (decide's form); returns what went wrong, or "" if nothing did.
std::string install(const std::string& text, int rank, const BlisConfig& blis, std::optional<KernelPlan>& plan) {
  const std::size_t newline = text.find('\n');
  const std::size_t source_end = text.find('\n', newline + 1);
  plan = KernelPlan::from_text(text.substr(newline + 1));
  if (!plan) return "rank 0's plan arrived unreadable";
  plan->source = text.substr(newline + 3, source_end - newline - 3);
  if (rank != 0) plan->source = "rank 0's, " + plan->source;
  try {
    install_kernel_plan(*plan, blis);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
  return {};
}

}  // namespace

KernelPlan install_agreed_kernel_plan(const Comm& comm, std::span<const GemmShape> shapes, const BlisConfig& blis,
                                      const KernelPlanMaker& make) {
  const int rank = comm.rank(), size = comm.size();
  std::array<char, kLine> mine{};
  if (const std::string line = RankKernels::of(blis).to_text(); line.size() < kLine) line.copy(mine.data(), kLine - 1);
  const std::vector<char> lines = comm.gather(mine, 0);

  std::string text = rank == 0 ? decide(lines, size, shapes, blis, make) : std::string();
  comm.broadcast_string(text, 0);
  const std::size_t newline = text.find('\n');
  if (text.compare(0, newline, "error") == 0) throw KernelPlanError("kernel plan: " + text.substr(newline + 1));

  std::optional<KernelPlan> plan;
  const std::string problem = install(text, rank, blis, plan);
  // agree_kernel_plan checked every rank's sets, so this is a bug if it happens: every rank stops, naming the first
  // rank that could not install the plan.
  const int first_failed = comm.min(problem.empty() ? size : rank);
  if (first_failed != size)
    throw KernelPlanError(fmt::format("kernel plan: rank {} could not install rank 0's plan{}", first_failed,
                                      problem.empty() ? "" : ": " + problem));
  return *plan;
}

KernelPlan install_agreed_kernel_plan(const Comm& comm, const TrainConfig& config) {
  constexpr std::size_t kPixels = 28 * 28, kClasses = 10;
  const std::unique_ptr<Model> model = make_model(config, kPixels, kClasses);
  const std::size_t batch = config.per_worker_batch(comm.size());
  const std::vector<GemmShape> shapes = batch > 0 ? model->planned_gemms(batch) : model->evaluation_gemms();
  return install_agreed_kernel_plan(comm, shapes);
}

}  // namespace gradsync
