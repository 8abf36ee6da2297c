// bench_compute: serial training throughput on real MNIST, and how close it is to the FLOP bound, i.e. the time
// BLIS needs for exactly the GEMMs a step performs, each timed in isolation at the same shapes. One core.
//   build/bin/bench_compute --epochs 5 --reps 3
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <vector>

#include "model/blis_setup.hpp"
#include "model/gemm.hpp"
#include "model/mlp.hpp"
#include "trainers/data_source.hpp"
#include "trainers/trainer.hpp"

namespace {

using namespace gradsync;

constexpr double kGemmTimingSeconds = 0.2;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call of one GEMM shape, on buffers that stay in cache as they do in training.
double gemm_seconds(const GemmShape& g) {
  const std::size_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
  std::vector<float> a(g.m * g.k, 0.5f), b(g.k * g.n, 0.25f), c(g.m * g.n, 0.0f);
  const auto call = [&] {
    gemm(g.transpose_a ? Op::T : Op::N, g.transpose_b ? Op::T : Op::N, g.m, g.n, g.k, 1.0f, a.data(), lda, b.data(), ldb,
         0.0f, c.data(), g.n);
  };
  for (int i = 0; i < 10; ++i) call();
  long calls = 0;
  const double start = now_s();
  while (now_s() - start < kGemmTimingSeconds) {
    for (int i = 0; i < 20; ++i) call();
    calls += 20;
  }
  return (now_s() - start) / static_cast<double>(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_compute: serial MNIST training throughput against the BLIS FLOP bound"};
  int epochs = 5, reps = 3;
  std::string data_dir;
  app.add_option("--epochs", epochs, "epochs per run")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--reps", reps, "runs per configuration (median reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--data", data_dir, "MNIST directory (default: data/mnist)");
  CLI11_PARSE(app, argc, argv);
  const BlisConfig blis = configure_blis(1);
  MPI_Init(&argc, &argv);
  const Comm self(MPI_COMM_SELF);
  TrainConfig base;
  base.data_dir = data_dir;
  base.epochs = epochs;
  base.quiet = true;
  const TrainTest data = load_training_data(base);
  fmt::print("bench_compute: serial, 1 core, real MNIST, {} epochs, median of {}; {}\n", epochs, reps, blis.summary());
  fmt::print("{:<9} {:>5} {:>9} {:>10} {:>10} {:>9} {:>11} {:>11} {:>9} {:>7}\n", "model", "batch", "wall_s", "compute_s",
             "images/s", "GFLOP", "GFLOP/s", "BLIS GF/s", "bound_s", "ratio");
  for (const std::string model : {"softmax", "mlp"}) {
    for (std::size_t batch : {32, 256}) {
      TrainConfig c = base;
      c.model = model;
      c.batch = batch;
      c.sgd.lr = 0.1f;
      // The bound is timed right after each run, so every ratio compares two measurements of the same minute
      // (this host's speed drifts by tens of percent between minutes); the ratio reported is the median of those.
      const Mlp mlp(c.layer_sizes(data.train.features, 10));
      double step_flops = 0;
      for (const GemmShape& g : mlp.training_gemms(batch)) step_flops += g.flops();
      std::vector<double> wall, compute, bound, ratio;
      TrainResult r;
      for (int i = 0; i < reps; ++i) {
        r = train(c, data, self);
        double step_gemm_s = 0;
        for (const GemmShape& g : mlp.training_gemms(batch)) step_gemm_s += gemm_seconds(g);
        wall.push_back(r.wall_s);
        compute.push_back(r.compute_s);
        bound.push_back(static_cast<double>(r.steps) * step_gemm_s);
        ratio.push_back(r.wall_s / bound.back());
      }
      const double steps = static_cast<double>(r.steps);
      const double w = median(wall), bnd = median(bound);
      fmt::print("{:<9} {:>5} {:>9.3f} {:>10.3f} {:>10.0f} {:>9.1f} {:>11.1f} {:>11.1f} {:>9.3f} {:>6.2f}x\n",
                 c.model_name(), batch, w, median(compute), steps * static_cast<double>(batch) / w,
                 steps * step_flops / 1e9, steps * step_flops / w / 1e9, steps * step_flops / bnd / 1e9, bnd,
                 median(ratio));
    }
  }
  fmt::print("wall_s: training time (test evaluation excluded); bound_s: the step's GEMMs at BLIS's measured rate\n"
             "for those shapes, times the steps, timed right after each run; ratio: the median over runs of\n"
             "wall_s / bound_s of the same run (wall_s and bound_s are medians too).\n");
  MPI_Finalize();
  return 0;
}
