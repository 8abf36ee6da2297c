// The shortest complete use of gradsync as a library (docs/library.md walks through it): a communicator handle on
// MPI_COMM_WORLD, an allreduce method by name run blocking and nonblocking, a compressor with error feedback, and
// what the cost model predicts. Run under mpirun; prints one line on rank 0 and exits 0 when every sum is right.
#include <gradsync/gradsync.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  gradsync::MpiSession mpi(argc, argv, MPI_THREAD_SINGLE);
  const gradsync::Comm world = gradsync::Comm::world();
  const int p = world.size();
  bool ok = true;

  // Blocking: every rank passes the same count; afterwards every rank holds the sum (here 0 + 1 + ... + p-1).
  auto ring = gradsync::make_allreduce("ring", world);
  std::vector<float> grads(1000, static_cast<float>(world.rank()));
  ring->run(std::span<float>(grads));
  for (float g : grads) ok = ok && g == static_cast<float>(p * (p - 1) / 2);

  // Nonblocking: start, do other work between test() calls, and touch the buffer only once test() said true.
  auto rhd = gradsync::make_allreduce("rhd", world);
  std::vector<double> values(12345, 1.0);
  rhd->start(std::span<double>(values));
  while (!rhd->test()) {
    // ... compute the next layer's gradient here ...
  }
  for (double v : values) ok = ok && v == p;

  // A compressor on a buffer of two tensors (a 64 x 32 matrix and its 64-long bias): top-k keeping 10 %, with error
  // feedback. step() leaves the sum of every worker's compressed gradient in the buffer, the same bits on every rank.
  const std::vector<gradsync::Tensor> tensors = {{0, 64, 32, "weights"}, {64 * 32, 1, 64, "bias"}};
  const gradsync::CompressorSetup setup{.workers = world,
                                        .method = gradsync::find_allreduce_method("ring"),
                                        .options = {},
                                        .tensors = tensors,
                                        .param = 0.1};
  gradsync::ErrorFeedback topk(gradsync::find_compressor("topk")->make(setup), 64 * 32 + 64, true);
  std::vector<float> layer(64 * 32 + 64, 1.0f);
  topk.step(layer);
  // Whatever top-k kept, the kept entries of an all-ones gradient sum to p on every rank.
  const auto [low, high] = world.min_max(static_cast<std::uint64_t>(layer[0] * 1000));
  ok = ok && low == high;

  // What auto would predict for a 4 MiB sum on this job (the tuning file, or the built-in defaults).
  const gradsync::CostModel model = gradsync::find_cost_model();
  const auto seconds = model.predict("ring", std::size_t{4} << 20, p, p, 0);

  ok = world.all_ok(ok);
  if (world.rank() == 0)
    std::printf("gradsync %s: %d ranks, sums %s, ring on 4 MiB predicted %.3f ms (%s)\n", GRADSYNC_VERSION, p,
                ok ? "right" : "WRONG", seconds ? *seconds * 1e3 : -1.0, model.source.c_str());
  return ok ? 0 : 1;
}
