// bench_compute: serial training throughput on real MNIST, and how close it is to the FLOP bound, i.e. the time
// the kernels need for exactly the GEMMs a step performs, each timed in isolation at the same shapes on the kernels
// the run uses (the kernel plan: the fastest BLIS set per shape, or the byte kernels for the input layer). Also: the
// kernel chosen per shape with every set's rate, the step's work outside GEMMs as its own share, and (--compare-default)
// the plan against BLIS's default set alone, run for run, alternating. One core.
//   build/bin/bench_compute --epochs 5 --reps 3 [--compare-default] [--csv compute.csv] [--remeasure]
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "bench/flags/bench_compute_flags.hpp"
#include "bench/fma_peak.hpp"
#include "cpu/isa.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/kernels/plan_cache.hpp"
#include "model/model.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/loop/agreed_kernel_plan.hpp"
#include "trainers/loop/data_source.hpp"
#include "trainers/loop/trainer.hpp"

namespace {

using namespace gradsync;

constexpr double kGemmTimingSeconds = 0.2;
constexpr double kAnatomySeconds = 0.5;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds per call of one GEMM shape on the kernels the installed plan gives it (a BLIS set, cut into row blocks
// as the model cuts it, or the byte kernels), on operands that stay in cache as they do in training.
double gemm_seconds(const GemmShape& g, double budget_s = kGemmTimingSeconds) {
  const auto blis_call = [&g] {
    const std::size_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
    auto a = std::make_shared<std::vector<float>>(g.m * g.k, 0.5f),
         b = std::make_shared<std::vector<float>>(g.k * g.n, 0.25f),
         c = std::make_shared<std::vector<float>>(g.m * g.n, 0.0f);
    return std::function<void()>([=, cntx = planned_context(g)] {
      gemm_in_row_blocks(g.transpose_a ? Op::T : Op::N, g.transpose_b ? Op::T : Op::N, g.m, g.n, g.k, 1.0f, a->data(),
                         lda, b->data(), ldb, 0.0f, c->data(), g.n, cntx, [] {});
    });
  };
  const std::function<void()> call = planned_on_bytes(g) ? byte_gemm_call(g) : blis_call();
  for (int i = 0; i < 10; ++i) call();
  long calls = 0;
  const double start = now_s();
  while (now_s() - start < budget_s) {
    for (int i = 0; i < 20; ++i) call();
    calls += 20;
  }
  return (now_s() - start) / static_cast<double>(calls);
}

// A step's GEMMs as distinct shapes, each with how many times a step calls it (a convolution's groups of images
// repeat one shape), in the order of their first call.
struct StepGemm {
  GemmShape shape;
  int calls = 0;
};
std::vector<StepGemm> step_gemms(const Model& model, std::size_t batch) {
  std::vector<StepGemm> gemms;
  for (const GemmShape& g : model.training_gemms(batch)) {
    const auto same = std::find_if(gemms.begin(), gemms.end(), [&g](const StepGemm& s) { return s.shape == g; });
    if (same == gemms.end())
      gemms.push_back({g, 1});
    else
      ++same->calls;
  }
  return gemms;
}

// The FLOPs of a training step's GEMMs.
double training_flops(const Model& model, std::size_t batch) {
  double flops = 0;
  for (const GemmShape& g : model.training_gemms(batch)) flops += g.flops();
  return flops;
}

double step_gemm_seconds(const Model& model, std::size_t batch, double budget_s = kGemmTimingSeconds) {
  double s = 0;
  for (const StepGemm& g : step_gemms(model, batch)) s += g.calls * gemm_seconds(g.shape, budget_s);
  return s;
}

// The same product with both operands as stored untransposed: the batch then is not rows any more, so not the
// byte kernels' operand either.
GemmShape untransposed(GemmShape g) {
  g.transpose_a = g.transpose_b = g.batch_operand = false;
  return g;
}

// A step's GEMM time both ways from one timing of each product as called: `as_called`, and `best_layout`, where
// each BLIS product counts as called or untransposed, whichever BLIS runs faster. The model reads the batch's
// rows transposed in the forward GEMM (no column copy to write), and BLIS's packing of a transposed operand may
// cost more than the untransposed call, so the second bound does not excuse that cost. Products on the byte
// kernels read the dataset's rows as they are: both bounds count them as called.
struct StepBound {
  double as_called = 0, best_layout = 0;
};
StepBound step_gemm_bound(const Model& model, std::size_t batch) {
  StepBound b;
  for (const auto& [g, calls] : step_gemms(model, batch)) {
    const double as_called = gemm_seconds(g);
    b.as_called += calls * as_called;
    b.best_layout +=
        calls *
        (g == untransposed(g) || planned_on_bytes(g) ? as_called : std::min(as_called, gemm_seconds(untransposed(g))));
  }
  return b;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per step of each part of a serial training step, measured on real batches in the trainer's order.
struct Anatomy {
  double gather = 0, pass = 0, gemm = 0, nan_check = 0, update = 0;
  double total() const { return gather + pass + nan_check + update; }
  double outside_gemm() const { return total() - gemm; }
};

Anatomy step_anatomy(const Model& model, const Dataset& train, std::size_t batch) {
  std::vector<float> params(model.parameter_count()), grads(model.parameter_count());
  model.init(params, 1);
  Sgd sgd(SgdOptions{}, model.parameter_count());
  Workspace ws(model, batch);
  Batch b(batch, train.features);
  std::vector<std::uint32_t> perm(train.rows);
  shuffled_indices(perm, 1, 0);
  const auto slice = [&](std::size_t first) { return std::span<const std::uint32_t>(perm.data() + first, batch); };
  const auto next = [&](std::size_t first) { return first + 2 * batch > train.rows ? 0 : first + batch; };
  Anatomy sum;
  long steps = 0;
  bool finite = true;
  const double start = now_s();
  for (std::size_t first = 0; now_s() - start < kAnatomySeconds; first = next(first), ++steps) {
    const double t0 = now_s();
    gather_batch(train, slice(first), b, model.reads_float_rows(batch));
    prefetch_examples(train, slice(next(first)), b);  // as the trainer does: the next batch's rows load meanwhile
    const double t1 = now_s();
    model.loss_and_gradient(params, b, grads, ws);
    const double t2 = now_s();
    finite = finite && all_finite(grads);
    const double t3 = now_s();
    sgd.step(params, grads);
    const double t4 = now_s();
    sum.gather += t1 - t0;
    sum.pass += t2 - t1;
    sum.nan_check += t3 - t2;
    sum.update += t4 - t3;
  }
  if (!finite) fmt::print("warning: the anatomy run diverged\n");
  const double per = 1e6 / static_cast<double>(steps);
  return {sum.gather * per, sum.pass * per, step_gemm_seconds(model, batch, 0.05) * 1e6, sum.nan_check * per,
          sum.update * per};
}

// The kernel chosen for each shape, every set's rate there (from the plan's measurement), and how often a training
// step calls the shape with its share of the step's FLOPs (blank: evaluation's, or a layout the bound compares).
void print_plan(const KernelPlan& plan, const std::string& default_set, const std::vector<StepGemm>& step) {
  double step_flops = 0;
  for (const StepGemm& g : step) step_flops += g.calls * g.shape.flops();
  for (const PlannedGemm& g : plan.gemms) {
    std::string rates;
    for (const auto& [set, s] : g.seconds) rates += fmt::format(" {}={:.1f}", set, g.shape.flops() / s / 1e9);
    const double chosen = g.seconds_of(g.kernels), fallback = g.seconds_of(default_set);
    const auto in_step = std::find_if(step.begin(), step.end(), [&g](const StepGemm& s) { return s.shape == g.shape; });
    const std::string calls = in_step == step.end() ? ""
                                                    : fmt::format("{:>3}x {:>3.0f}%", in_step->calls,
                                                                  100 * in_step->calls * g.shape.flops() / step_flops);
    fmt::print("  {}{}{} {:>5} x {:>5} x {:>5} {:>9} -> {:<8} {:>6}   GFLOP/s:{}\n", g.shape.transpose_a ? 'T' : 'N',
               g.shape.transpose_b ? 'T' : 'N', g.shape.batch_operand ? 'b' : ' ', g.shape.m, g.shape.n, g.shape.k, calls,
               g.kernels, chosen > 0 && fallback > 0 ? fmt::format("{:.2f}x", fallback / chosen) : "", rates);
  }
}

using Flags = bench::ComputeFlags;

// What every configuration shares: the data, the BLIS setup, the core's peak and the CSV file (or nullptr).
struct Context {
  const Flags& flags;
  const BlisConfig& blis;
  const TrainTest& data;
  const Comm& self;
  double peak = 0;
  std::FILE* out = nullptr;
};

// The finished lines of the three tables, one line per configuration.
struct Tables {
  std::vector<std::string> table, anatomy, versus;
};

// Per run of one configuration; the default-set vectors stay empty without --compare-default.
struct Runs {
  std::vector<double> wall, compute, bound, ratio, best_ratio, default_wall, default_bound, speedup;
  long steps = 0;  // of the last run (every run makes the same steps)
};

// Every rank (one here): the plan for the shapes a step of `model` at `batch` runs, and the untransposed forms for
// the best-layout bound.
KernelPlan plan_for(const Model& model, std::size_t batch) {
  std::vector<GemmShape> shapes = model.planned_gemms(batch);
  for (const GemmShape& g : model.training_gemms(batch))
    if (std::find(shapes.begin(), shapes.end(), untransposed(g)) == shapes.end()) shapes.push_back(untransposed(g));
  return install_agreed_kernel_plan(Comm::world(), shapes);
}

// --reps runs of one configuration on `plan`, each (with --compare-default) followed by the same run on BLIS's
// default set; one CSV row per run.
Runs run_reps(const Context& ctx, const TrainConfig& c, const Model& model, const KernelPlan& plan) {
  const std::size_t batch = c.batch;
  // The bound is timed right after each run, so every ratio compares two measurements of the same minute
  // (this host's speed drifts by tens of percent between minutes); the ratio reported is the median of those.
  Runs runs;
  for (int i = 0; i < ctx.flags.reps; ++i) {
    install_kernel_plan(plan, ctx.blis);
    const TrainResult r = train(c, ctx.data, ctx.self);
    runs.steps = r.steps;
    const StepBound step = step_gemm_bound(model, batch);
    const double b = static_cast<double>(r.steps) * step.as_called;
    runs.wall.push_back(r.wall_s);
    runs.compute.push_back(r.compute_s);
    runs.bound.push_back(b);
    runs.ratio.push_back(r.wall_s / b);
    runs.best_ratio.push_back(r.wall_s / (static_cast<double>(r.steps) * step.best_layout));
    double fixed_wall = NAN, fixed_bound = NAN;
    if (ctx.flags.compare_default) {  // the same run on BLIS's default set for every shape, right after
      install_kernel_plan(KernelPlan{{}, "default", {}}, ctx.blis);
      const TrainResult d = train(c, ctx.data, ctx.self);
      fixed_wall = d.wall_s;
      fixed_bound = static_cast<double>(d.steps) * step_gemm_seconds(model, batch);
      runs.default_wall.push_back(fixed_wall);
      runs.default_bound.push_back(fixed_bound);
      runs.speedup.push_back(d.wall_s / r.wall_s);
    }
    if (ctx.out)
      fmt::print(ctx.out, "{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f}\n", c.model_name(), batch, i + 1,
                 r.steps, r.wall_s, r.compute_s, b, static_cast<double>(r.steps) * step.best_layout, fixed_wall,
                 fixed_bound);
  }
  return runs;
}

// The three table lines of one configuration, from its runs and its step anatomy.
void add_lines(const Context& ctx, const TrainConfig& c, const Model& model, const Runs& runs, Tables& t) {
  const std::size_t batch = c.batch;
  const double step_flops = training_flops(model, batch);
  const double steps = static_cast<double>(runs.steps), peak = ctx.peak;
  const double w = median(runs.wall), bnd = median(runs.bound);
  t.table.push_back(fmt::format(
      "{:<9} {:>5} {:>9.3f} {:>10.3f} {:>10.0f} {:>9.1f} {:>11.1f} {:>11.1f} {:>9.3f} {:>6.2f}x {:>9.2f}x {:>9.0f}%",
      c.model_name(), batch, w, median(runs.compute), steps * static_cast<double>(batch) / w, steps * step_flops / 1e9,
      steps * step_flops / w / 1e9, steps * step_flops / bnd / 1e9, bnd, median(runs.ratio), median(runs.best_ratio),
      peak > 0 ? 100 * steps * step_flops / bnd / 1e9 / peak : NAN));
  if (ctx.flags.compare_default)
    t.versus.push_back(fmt::format("{:<9} {:>5} {:>10.3f} {:>10.3f} {:>8.2f}x {:>13.3f} {:>13.3f}", c.model_name(), batch,
                                   w, median(runs.default_wall), median(runs.speedup), bnd, median(runs.default_bound)));
  const Anatomy a = step_anatomy(model, ctx.data.train, batch);
  t.anatomy.push_back(fmt::format("{:<9} {:>5} {:>8.1f} {:>8.1f} {:>8.1f} {:>9.1f} {:>8.1f} {:>8.1f} {:>9.1f} {:>7.0f}%",
                                  c.model_name(), batch, a.total(), a.gemm, a.gather, a.pass - a.gemm, a.nan_check,
                                  a.update, a.outside_gemm(), 100 * a.outside_gemm() / a.total()));
}

// One model at one batch size: its plan printed, its runs, its lines.
void measure(const Context& ctx, const TrainConfig& base, const std::string& name, std::size_t batch, Tables& t) {
  TrainConfig c = base;
  c.model = &model_info(name);  // one of the list: --models checked it
  c.batch = batch;
  c.sgd.lr = 0.1f;
  const std::unique_ptr<Model> model = make_model(c, ctx.data.train.features, 10);
  const KernelPlan plan = plan_for(*model, batch);
  fmt::print(
      "{} batch {} ({} parameters, {:.3f} GFLOP of GEMMs per training step): kernels per shape ({}; b: B is the "
      "input batch, and the products of one batch are chosen together, widening it into floats counted once); "
      "calls per training step and their share of its GEMM FLOPs; x = speed-up over {}\n",
      c.model_name(), batch, model->parameter_count(), training_flops(*model, batch) / 1e9, plan.source, ctx.blis.arch);
  print_plan(plan, ctx.blis.arch, step_gemms(*model, batch));
  const Runs runs = run_reps(ctx, c, *model, plan);
  install_kernel_plan(plan, ctx.blis);
  add_lines(ctx, c, *model, runs, t);
}

void print_tables(const Flags& f, const BlisConfig& blis, const Tables& t) {
  fmt::print("\n{:<9} {:>5} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11} {:>9} {:>7} {:>10} {:>10}\n", "model", "batch",
             "wall_s", "compute_s", "images/s", "GFLOP", "GFLOP/s", "bound GF/s", "bound_s", "ratio", "best-layout",
             "bound/peak");
  for (const std::string& line : t.table) fmt::print("{}\n", line);
  fmt::print(
      "wall_s: training time (test evaluation excluded); bound_s: the step's GEMMs at their measured rate\n"
      "on the planned kernels (a BLIS set or the byte kernels), times the steps, timed right after each run; ratio: the\n"
      "median over runs of wall_s / bound_s of the same run (wall_s and bound_s are medians too);\n"
      "best-layout: the same ratio against a bound that counts each BLIS product as called or untransposed,\n"
      "whichever is faster (the forward GEMM reads the batch's rows transposed); byte-kernel products as called;\n"
      "bound/peak: the bound's rate over the core's peak (no kernel can beat the peak).\n");
  if (f.compare_default) {
    fmt::print("\nplan against {} alone, alternating run for run:\n{:<9} {:>5} {:>10} {:>10} {:>9} {:>13} {:>13}\n",
               blis.arch, "model", "batch", "plan_s", "default_s", "speedup", "plan bound_s", "default bound");
    for (const std::string& line : t.versus) fmt::print("{}\n", line);
    fmt::print("speedup: median over runs of default_s / plan_s of adjacent runs.\n");
  }
  fmt::print(
      "\nstep anatomy, us per step (serial step in the trainer's order, {:.1f} s of real batches each):\n"
      "{:<9} {:>5} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8}\n",
      kAnatomySeconds, "model", "batch", "step", "GEMMs", "gather", "elemwise", "NaN chk", "update", "non-GEMM", "share");
  for (const std::string& line : t.anatomy) fmt::print("{}\n", line);
  fmt::print(
      "GEMMs: the step's GEMMs timed alone on the planned kernels; elemwise: the forward and backward pass\n"
      "less its GEMMs (bias, ReLU, softmax, loss, output delta, bias gradients, ReLU mask; for the cnn also\n"
      "im2col, col2im and the pools).\n");
}

// After MPI_Init: every configuration, then the tables. Returns the exit code.
int run(const Flags& f, const BlisConfig& blis, const TrainTest& data, std::FILE* out) {
  const Comm self(MPI_COMM_SELF);
  TrainConfig base;
  base.data_dir = f.data_dir;
  base.epochs = f.epochs;
  base.quiet = true;
  fmt::print("bench_compute: serial, 1 core, real MNIST, {} epochs, median of {}; {}\n", f.epochs, f.reps,
             kernels_summary(blis));
  const double peak = bench::fma_peak_gflops();
  fmt::print("core peak: {:.1f} GFLOP/s (independent FMA chains at this build's widest vectors)\n", peak);
  const Context ctx{f, blis, data, self, peak, out};
  Tables tables;
  for (const std::string& model : f.models)
    for (std::size_t batch : f.batches) measure(ctx, base, model, batch, tables);
  print_tables(f, blis, tables);
  if (out && std::fclose(out) != 0) {
    fmt::print(stderr, "bench_compute: --csv {}: writing it failed\n", f.csv);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (const std::optional<int> done = bench::parse_compute_flags(argc, argv, f)) return *done;
  if (f.peak_only) {
    const bench::FmaPeaks p = bench::fma_peaks();
    fmt::print("avx512_gflops={:.1f} avx2_gflops={:.1f}\n", p.avx512, p.avx2);
    return 0;
  }
  if (f.remeasure) setenv("GRADSYNC_KERNEL_CACHE", "off", 1);  // make_kernel_plan: always measure, never write
  // The data and the CSV are both checked before a minute of runs, the data first so that a mistyped --data
  // leaves an earlier CSV as it was.
  TrainConfig data_config;
  data_config.data_dir = f.data_dir;
  const std::optional<TrainTest> data = load_training_data_alone(data_config, "bench_compute");
  if (!data) return 2;  // bad --data, said in one line (docs/reference.md)
  std::FILE* out = nullptr;
  if (!f.csv.empty()) {
    out = std::fopen(f.csv.c_str(), "w");
    if (!out) {
      fmt::print(stderr, "bench_compute: --csv {}: cannot open it for writing\n", f.csv);
      return 2;
    }
    fmt::print(out, "model,batch,rep,steps,wall_s,compute_s,bound_s,best_layout_bound_s,fixed_wall_s,fixed_bound_s\n");
  }
  refuse_bad_isa_request("bench_compute");
  const BlisConfig blis = configure_blis(1);
  MPI_Init(&argc, &argv);
  const int code = run(f, blis, *data, out);
  MPI_Finalize();
  return code;
}
