#pragma once
// Error feedback (Karimireddy et al., ICML 2019): what compression leaves out of a worker's gradient is not lost but
// added to its next gradient. Per worker and step, in float32:
//   a = g + r;   c = the worker's contribution as the others decode it (Compressor::exchange);   r' = a - c
// so that the applied update c and the new residual r' add up to the gradient and the old residual (up to the one
// rounding of the subtraction). Without it compressed SGD can stall at the wrong point (a biased compressor such as
// the scaled sign) or lose what is never sent (top-k's small entries).
#include <memory>
#include <span>
#include <vector>

#include "compression/compressor.hpp"

namespace gradsync {

class ErrorFeedback {
 public:
  // Wraps `compressor` for a model of `count` floats; allocates its buffers once. `on` = false is the ablation:
  // a = g every step and no residual is kept.
  ErrorFeedback(std::unique_ptr<Compressor> compressor, std::size_t count, bool on);

  // Collective over the workers, as Compressor::exchange. `grads` (count floats, the caller's) is this worker's
  // gradient on entry and the sum over workers of their contributions on return. start() then wait().
  void step(std::span<float> grads);
  // The same step, nonblocking, as Compressor::start/test/wait: start() forms a = g + r and starts the exchange;
  // once test() returned true or wait() returned, `grads` holds the sum and the residual is r' = a - c. `grads`
  // is the compressor's until then, and residual() and contribution() are read only then.
  void start(std::span<float> grads);
  bool test();
  void wait();

  bool on() const { return on_; }
  // This worker's residual r (zeros when off or before the first step): training state, different on every
  // worker. Writable so that a resumed run can put it back: checkpoints hold every worker's, in worker order
  // (compressed_jobs.cpp).
  //
  // On an elastic resume to fewer workers the residuals of the workers that left are dropped, not folded into
  // the survivors. Folding would keep their sum (the update still owed), but a survivor's residual is averaged over
  // the new, smaller number of workers, so a folded one would be applied W_old / W_new times too strongly unless
  // rescaled, and it would crowd the survivor's own top-k or sign pattern for several steps. Dropping shifts the
  // model that error feedback tracks once, by lr / W_old times the dropped residuals: the size of the compression
  // error those workers carried, which error feedback absorbs like any other bounded perturbation.
  std::span<float> residual() { return residual_; }
  // The last step's contribution c of this worker (tests check the bookkeeping against it).
  std::span<const float> contribution() const { return mine_; }
  Compressor& compressor() { return *compressor_; }

 private:
  std::unique_ptr<Compressor> compressor_;
  bool on_;
  std::vector<float> residual_;  // r between steps; a during one
  std::vector<float> mine_;
  bool in_flight_ = false;
  // The exchange completed: r' = a - c (or zero when off).
  void finish();
};

}  // namespace gradsync
