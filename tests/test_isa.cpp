// One build for every x86-64 CPU: the instruction set is named and forced as documented, each set's hot loops
// compute what the baseline's compute (the same bits where the operations are the same, else to rounding), a
// native build names what a CPU lacks, and ranks on different sets agree on one kernel plan.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "collectives/bf16.hpp"
#include "collectives/comm.hpp"
#include "collectives/dtype.hpp"
#include "cpu/isa.hpp"
#include "cpu/native_check.hpp"
#include "model/kernels/agreement.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/mlp.hpp"
#include "model/sgd.hpp"
#include "model/synthetic.hpp"
#include "test_support.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"

using namespace gradsync;

namespace {

float pseudo(std::size_t i, std::size_t salt) {
  return static_cast<float>((i * 7919 + salt * 104729) % 389) / 97.0f - 2.0f;
}

// Everything the dispatched loops compute on fixed inputs, run on one instruction set.
struct LoopResults {
  std::vector<float> sum, bf16_back, bf16_sum, rounded, sgd, forward, gradient, grads;
  std::vector<std::int64_t> int_sum;
  std::vector<std::uint16_t> bf16;
  float loss = 0;
};

LoopResults run_loops(Isa isa) {
  const ScopedIsa on(isa);
  LoopResults r;
  constexpr std::size_t n = 1003;  // not a multiple of any vector width: the tails run too
  std::vector<float> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = pseudo(i, 1), b[i] = pseudo(i, 2);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  a[6] = std::numeric_limits<float>::infinity();
  r.sum = a;
  add_into(r.sum.data(), b.data(), n);
  r.int_sum.assign(n, 7);
  std::vector<std::int64_t> ints(n);
  std::iota(ints.begin(), ints.end(), -500);
  add_into(r.int_sum.data(), ints.data(), n);
  r.bf16.resize(n);
  to_bf16(a.data(), r.bf16.data(), n);
  r.bf16_back.resize(n);
  from_bf16(r.bf16.data(), r.bf16_back.data(), n);
  r.bf16_sum = b;
  add_bf16_into(r.bf16_sum.data(), r.bf16.data(), n);
  r.rounded = b;
  round_to_bf16(r.rounded.data(), n);
  r.sgd = b;
  Sgd(SgdOptions{0.1f, 0.9f, 0.01f}, n).step(r.sgd, a);

  // The byte kernels at an output count and feature count with tails on every set.
  constexpr std::size_t outputs = 10, examples = 7, features = 37;
  std::vector<std::uint8_t> bytes(examples * features);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 31 % 256);
  std::vector<const std::uint8_t*> rows;
  for (std::size_t j = 0; j < examples; ++j) rows.push_back(&bytes[j * features]);
  r.forward.assign(outputs * examples, 0.5f);
  forward_from_bytes(outputs, examples, features, a.data(), rows.data(), kPixelScale, r.forward.data(), examples);
  r.gradient.resize(outputs * features);
  weight_gradient_from_bytes(outputs, examples, features, b.data(), examples, rows.data(), kPixelScale,
                             r.gradient.data());

  // A whole pass of a small MLP on the float path: gather, ReLU, softmax, the bias sums.
  const Mlp model({20, 16, 4});
  const Dataset data = make_blobs(37, 20, 4, 0.3f, 5);
  std::vector<float> params(model.parameter_count());
  r.grads.resize(model.parameter_count());
  model.init(params, 3);
  Workspace ws(model, data.rows);
  Batch batch(data.rows, data.features);
  std::vector<std::uint32_t> all(data.rows);
  std::iota(all.begin(), all.end(), 0u);
  gather_batch(data, all, batch);
  r.loss = model.loss_and_gradient(params, batch, r.grads, ws);
  return r;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// The largest |x - y| relative to the larger magnitude (at least 1).
double worst_difference(const std::vector<float>& x, const std::vector<float>& y) {
  double worst = x.size() == y.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    worst = std::max(worst,
                     std::fabs(double(x[i]) - y[i]) / std::max({1.0, std::fabs(double(x[i])), std::fabs(double(y[i]))}));
  return worst;
}

void check_against_baseline(Isa isa) {
  const LoopResults base = run_loops(Isa::baseline), here = run_loops(isa);
  // One operation per element: the same bits on every set (NaN and Inf included).
  CHECK(same_bits(here.sum, base.sum));
  CHECK(here.int_sum == base.int_sum);
  CHECK(here.bf16 == base.bf16);
  CHECK(same_bits(here.bf16_back, base.bf16_back));
  CHECK(same_bits(here.bf16_sum, base.bf16_sum));
  CHECK(same_bits(here.rounded, base.rounded));
  // Sums in another order, or fused multiply-adds: to rounding.
  CHECK(worst_difference(here.sgd, base.sgd) < 1e-6);
  CHECK(worst_difference(here.forward, base.forward) < 1e-5);
  CHECK(worst_difference(here.gradient, base.gradient) < 1e-5);
  CHECK(worst_difference(here.grads, base.grads) < 1e-5);
  CHECK(std::fabs(here.loss - base.loss) < 1e-5 * std::fabs(base.loss));
  // And the vector form is the one that ran: its byte kernels are not the plain loop.
  const ScopedIsa on(isa);
  CHECK(byte_gemm_kernels() == isa_name(isa));
}

}  // namespace

TEST_CASE("instruction sets are named, ordered and forced no higher than the CPU runs") {
  for (Isa isa : {Isa::baseline, Isa::avx2, Isa::avx512}) CHECK(isa_from_name(isa_name(isa)) == isa);
  CHECK_FALSE(isa_from_name("AVX2"));
  CHECK_FALSE(isa_from_name("sse2"));
  CHECK(active_isa() <= cpu_isa());
  const Isa before = active_isa();
  {
    const ScopedIsa forced(Isa::baseline);
    CHECK(active_isa() == Isa::baseline);
    CHECK_FALSE(byte_gemm_vectorized());
    CHECK(byte_gemm_kernels() == "plain");
  }
  CHECK(active_isa() == before);
  if (cpu_isa() < Isa::avx512) CHECK_THROWS_AS(ScopedIsa(Isa::avx512), std::invalid_argument);
}

TEST_CASE("a native build names the features a CPU lacks, and a portable build needs none") {
  CHECK(missing_features({"avx2", "avx512f", "fma"}, {"sse3", "avx2", "fma"}) == std::vector<std::string>{"avx512f"});
  CHECK(missing_features({}, {"avx2"}).empty());
  CHECK(missing_features({"avx2"}, {}) == std::vector<std::string>{"avx2"});
#if !defined(__AVX__)
  CHECK(built_features().empty());  // this test binary is a portable build: it runs on any x86-64 CPU
#endif
}

TEST_CASE("the AVX2 loops compute what the baseline loops compute" * doctest::test_suite("needs_avx2")) {
  SKIP_UNLESS(cpu_isa() >= Isa::avx2, "this CPU has no AVX2 + FMA");
  check_against_baseline(Isa::avx2);
}

TEST_CASE("the AVX-512 loops compute what the baseline loops compute" * doctest::test_suite("needs_avx512")) {
  SKIP_UNLESS(cpu_isa() >= Isa::avx512, "this CPU has no AVX-512 (F, CD, DQ, BW, VL)");
  check_against_baseline(Isa::avx512);
}

TEST_CASE("byte kernels of different instruction sets are different kernels to the agreement") {
  const auto rank = [](const char* bytes) { return RankKernels{"zen3", false, {"zen3", "skx", bytes}}; };
  KernelPlan measured;
  measured.source = "measured";
  measured.gemms.push_back({{false, true, 10, 32, 784, true}, "bytes", {}});
  const auto make = [&] { return measured; };
  std::vector<RankKernels> ranks{rank("bytes/avx512"), rank("bytes/avx512"), rank("bytes/avx2")};
  KernelPlan plan = agree_kernel_plan(ranks, make);
  CHECK(plan.gemms.empty());
  CHECK(plan.source.find("rank 2 cannot run bytes") != std::string::npos);
  ranks[2] = rank("bytes/avx512");
  plan = agree_kernel_plan(ranks, make);
  REQUIRE(plan.gemms.size() == 1);
  CHECK(plan.gemms.front().kernels == "bytes");
}

TEST_CASE("ranks forced onto different instruction sets agree on one kernel plan" * doctest::test_suite("needs_avx2")) {
  SKIP_UNLESS(cpu_isa() >= Isa::avx2, "this CPU has no AVX2 + FMA: every rank runs the baseline");
  test::RestorePlan restore;
  const Comm world = Comm::world();
  const bool last = world.rank() == world.size() - 1;
  // The last rank as a host without AVX2 would run: no vector byte kernels there.
  const ScopedIsa on(last ? Isa::baseline : cpu_isa());
  const std::vector<GemmShape> shapes = Mlp({784, 10}).planned_gemms(32);
  // Rank 0's plan puts the input layer's products on the byte kernels, as a measurement on its CPU may.
  const KernelPlanMaker wants_bytes = [](std::span<const GemmShape> s, const BlisConfig& b) {
    KernelPlan plan;
    plan.source = "measured";
    for (const GemmShape& g : s) plan.gemms.push_back({g, byte_gemm_handles(g) ? std::string(kByteKernels) : b.arch, {}});
    return plan;
  };
  const KernelPlan plan = install_agreed_kernel_plan(world, shapes, configured_blis(), wants_bytes);
  for (const PlannedGemm& g : plan.gemms) CHECK(g.kernels != kByteKernels);
  CHECK(plan.source.find("cannot run bytes") != std::string::npos);
  for (const GemmShape& g : shapes) CHECK_FALSE(planned_on_bytes(g));
}
