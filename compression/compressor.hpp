#pragma once
// A gradient compressor: how the workers' gradients are summed when each worker sends less than its whole gradient.
// The list of compressors is compression/compressors.hpp; error feedback, which every compressor gets, is
// compression/error_feedback.hpp. A compressor is planned once (buffers, communicator, tags) and run every
// step without allocating.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/comm.hpp"
#include "model/layer_shape.hpp"

namespace gradsync {

// One tensor of the flat parameter buffer: `rows` x `cols` floats, row-major, from `offset`. A matrix has two
// dimensions above one; anything else (a bias) is a vector.
struct Tensor {
  std::size_t offset = 0, rows = 0, cols = 0;
  std::string name;  // for error texts: "layer 2 weights (10 x 128)"
  std::size_t size() const { return rows * cols; }
  bool matrix() const { return rows > 1 && cols > 1; }
};

// The tensors of a model's `layers` (Model::layers(): each layer's weight matrix, then its biases), in buffer order;
// they tile the buffer.
std::vector<Tensor> model_tensors(std::span<const LayerShape> layers);

// The parts of `tensors` (tiling a buffer) that lie in `range`, offsets rebased to its start, so that they tile
// [0, range.size()). A tensor cut by an end of the range is left as the vector of its part (one row).
std::vector<Tensor> tensors_cut(std::span<const Tensor> tensors, ElementRange range);

class Compressor {
 public:
  virtual ~Compressor() = default;
  // Collective over the workers' communicator: every worker calls it once per step. `in` is this worker's gradient
  // (with its error-feedback residual added). Writes `mine`, this worker's own contribution as the others decode it,
  // and `sum`, the sum of every worker's contribution: the same bits on every worker. All three hold the planned
  // parameter count (the tensors' whole range), are the caller's, and do not overlap. start() then wait().
  void exchange(std::span<const float> in, std::span<float> mine, std::span<float> sum) {
    start(in, mine, sum);
    wait();
  }
  // The same exchange, nonblocking, with the same bits: start() does the local work that needs no message and
  // posts the first; test() moves it on without blocking (it may do the local work between its rounds of
  // messages) and returns true once `mine` and `sum` are written; wait() blocks until then. Until then the caller
  // neither writes the three spans nor reads `mine` and `sum`. Every worker starts the same sequence of exchanges; one is
  // in flight per compressor at a time. Several compressors on one communicator may be in flight only one after another,
  // each completed before the next starts (trainers/overlap/comm_engine.hpp runs them so).
  virtual void start(std::span<const float> in, std::span<float> mine, std::span<float> sum) = 0;
  virtual bool test() = 0;
  virtual void wait() = 0;
  // Training state of the compressor besides the residual, the same on every worker (PowerSGD's warm-started Q and
  // its count of redrawn columns), for checkpoints to save and put back; empty if it keeps none.
  virtual std::span<float> state() { return {}; }
};

// What a compressor is built from. `workers` and `method` must outlive the compressor; the rest is read while planning.
struct CompressorSetup {
  const Comm& workers;            // the ranks that sum gradients
  const AllreduceMethod* method;  // --sync's allreduce: a compressor that allreduces uses it
  AllreduceOptions options;       // and plans it with these
  // The tensors it sums, tiling [0, their count): model_tensors(), or a bucket's of them with offsets rebased to the
  // bucket's start (read while planning only).
  std::span<const Tensor> tensors;
  double param = 0;        // R or F, as compressors.hpp checked it
  std::uint64_t seed = 1;  // starting state that must be equal on every worker
  // The model's tensors before `tensors` (a bucket's place in the model; empty for the whole model): random starting
  // state is drawn as a compressor planned on the whole model would draw it for these tensors.
  std::span<const Tensor> before = {};
};

}  // namespace gradsync
