#include "model/kernels/plan_timing.hpp"

#include <blis.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/isa_dispatch.hpp"
#include "model/dataset.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/cold_rows.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/kernel_sets.hpp"

namespace gradsync {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Per-call seconds of one candidate on one shape: `calls` back-to-back calls, as a training step makes them.
double time_calls(const std::function<void()>& call, int calls) {
  const double start = now_s();
  for (int i = 0; i < calls; ++i) call();
  return (now_s() - start) / calls;
}

// Which candidate a shape gets from its timings: the fastest, except that `preferred` keeps it unless another
// beats it by more than kPlanMargin. Candidates named `skip` are left out. Null if none is left.
const std::pair<std::string, double>* pick(const PlannedGemm& g, std::string_view preferred, std::string_view skip = {}) {
  const std::pair<std::string, double>* winner = nullptr;
  for (const auto& candidate : g.seconds)
    if (candidate.first != skip && (!winner || candidate.second < winner->second)) winner = &candidate;
  for (const auto& candidate : g.seconds)
    if (winner && candidate.first == preferred && candidate.second <= winner->second * (1 + kPlanMargin))
      winner = &candidate;
  return winner;
}

// The input batch, as (outputs, examples, features), of a shape whose B operand is the batch: the forward product
// (NT, m x batch x features) or the weight gradient (NN, m x features x batch).
std::tuple<std::size_t, std::size_t, std::size_t> batch_of(const GemmShape& g) {
  return g.transpose_b ? std::tuple{g.m, g.n, g.k} : std::tuple{g.m, g.k, g.n};
}

// The products from plan.gemms[first] on that read the same batch as it does and have a timing of the byte
// kernels, each marked in `done`.
std::vector<PlannedGemm*> batch_group(KernelPlan& plan, std::size_t first, std::vector<bool>& done) {
  std::vector<PlannedGemm*> group;
  for (std::size_t j = first; j < plan.gemms.size(); ++j)
    if (!done[j] && plan.gemms[j].shape.batch_operand && plan.gemms[j].seconds_of(kByteKernels) > 0 &&
        batch_of(plan.gemms[j].shape) == batch_of(plan.gemms[first].shape)) {
      done[j] = true;
      group.push_back(&plan.gemms[j]);
    }
  return group;
}

// Gives each product of `group` the byte kernels or its pick among the BLIS sets, whichever assignment costs
// least, with `widen` seconds added once if any product reads floats.
void choose_for_group(const std::vector<PlannedGemm*>& group, std::string_view preferred, double widen) {
  std::vector<const std::pair<std::string, double>*> on_blis;
  for (const PlannedGemm* g : group) on_blis.push_back(pick(*g, preferred, kByteKernels));
  unsigned best_mask = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (unsigned mask = 0; mask < (1u << group.size()); ++mask) {  // bit j set: member j on BLIS
    double cost = mask != 0 ? widen : 0.0;
    for (std::size_t j = 0; j < group.size(); ++j)
      cost += (mask >> j & 1u) ? (on_blis[j] ? on_blis[j]->second : std::numeric_limits<double>::infinity())
                               : group[j]->seconds_of(kByteKernels);
    if (cost < best_cost) {
      best_cost = cost;
      best_mask = mask;
    }
  }
  for (std::size_t j = 0; j < group.size(); ++j)
    group[j]->kernels = (best_mask >> j & 1u) ? on_blis[j]->first : std::string(kByteKernels);
}

// One shape's timings: every context in `contexts` (named by `sets`) through gemm_in_row_blocks, and the byte
// kernels where they run it, `rounds` interleaved samples each; the kernels are `preferred`'s pick.
PlannedGemm time_shape(const GemmShape& g, std::span<const std::string> sets, const std::vector<cntx_t*>& contexts,
                       std::string_view preferred, int rounds) {
  std::vector<float> a(g.m * g.k), b(g.k * g.n), c(g.m * g.n);
  std::uint32_t x = 12345;
  const auto fill = [&x](std::vector<float>& v) {
    for (float& f : v) f = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
  };
  fill(a);
  fill(b);
  const std::size_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
  std::vector<std::string> names(sets.begin(), sets.end());
  std::vector<std::function<void()>> calls;
  for (cntx_t* cntx : contexts)
    calls.emplace_back([&, cntx] {
      gemm_in_row_blocks(g.transpose_a ? Op::T : Op::N, g.transpose_b ? Op::T : Op::N, g.m, g.n, g.k, 1.0f, a.data(), lda,
                         b.data(), ldb, 0.0f, c.data(), g.n, cntx, [] {});
    });
  if (byte_gemm_vectorized() && byte_gemm_handles(g)) {
    names.emplace_back(kByteKernels);
    calls.push_back(byte_gemm_call(g));
  }
  // About half a millisecond per sample: long enough to time, short enough that rounds interleave finely.
  const int repeats = static_cast<int>(std::clamp(5e-4 * 3e10 / g.flops(), 1.0, 2000.0));
  std::vector<double> best(names.size(), std::numeric_limits<double>::infinity());
  for (const auto& call : calls) time_calls(call, 2);  // warm caches, pools
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::size_t s = (i + static_cast<std::size_t>(r)) % names.size();  // rotate who goes first
      best[s] = std::min(best[s], time_calls(calls[s], repeats));
    }
  PlannedGemm planned{g, "", {}};
  for (std::size_t s = 0; s < names.size(); ++s) planned.seconds.emplace_back(names[s], best[s]);
  planned.kernels = pick(planned, preferred)->first;
  return planned;
}

}  // namespace

double widen_batch_seconds(std::size_t examples, std::size_t features, int rounds) {
  ColdRows source(examples, features);
  std::vector<float> rows(examples * features);
  // As gather_batch runs it: a new batch of random rows, each asked for kGatherLookahead rows ahead, compiled for the
  // process's instruction set.
  const auto widen = [&] {
    const std::span<const std::uint8_t* const> batch = source.next();
    on_active_isa([&]() GRADSYNC_INLINE_LOOP {
      for (std::size_t j = 0; j < examples; ++j) {
        if (j + kGatherLookahead < examples) request_bytes(batch[j + kGatherLookahead], features);
        widen_row(batch[j], features, &rows[j * features]);
      }
    });
  };
  const int repeats = static_cast<int>(std::clamp(1.5e7 / static_cast<double>(rows.size() + 1), 1.0, 2000.0));
  double best = std::numeric_limits<double>::infinity();
  time_calls(widen, 2);
  for (int r = 0; r < rounds; ++r) best = std::min(best, time_calls(widen, repeats));
  return best;
}

void choose_batch_products_together(KernelPlan& plan, std::string_view preferred,
                                    const std::function<double(std::size_t, std::size_t)>& widen_seconds) {
  std::vector<bool> done(plan.gemms.size(), false);
  for (std::size_t i = 0; i < plan.gemms.size(); ++i) {
    if (done[i] || !plan.gemms[i].shape.batch_operand || plan.gemms[i].seconds_of(kByteKernels) <= 0) continue;
    const std::vector<PlannedGemm*> group = batch_group(plan, i, done);
    const auto [outputs, examples, features] = batch_of(group.front()->shape);
    choose_for_group(group, preferred, widen_seconds(examples, features));
  }
}

KernelPlan measure_kernel_plan(std::span<const GemmShape> shapes, std::span<const std::string> sets,
                               std::string_view preferred, int rounds) {
  KernelPlan plan;
  plan.source = "measured";
  std::vector<cntx_t*> contexts;
  for (const std::string& set : sets) {
    contexts.push_back(kernel_set_context(set));
    if (!contexts.back()) throw std::invalid_argument(fmt::format("measure_kernel_plan: no kernel set {} here", set));
  }
  if (sets.empty()) return plan;
  for (const GemmShape& g : shapes)
    if (!plan.find(g) && g.flops() != 0) plan.gemms.push_back(time_shape(g, sets, contexts, preferred, rounds));
  choose_batch_products_together(plan, preferred, [rounds](std::size_t examples, std::size_t features) {
    return widen_batch_seconds(examples, features, rounds);
  });
  return plan;
}

}  // namespace gradsync
