#pragma once
// Synchronous SGD whose gradient goes through jobs (trainers/overlap/gradient_jobs.hpp: each range's allreduce, or its
// error-fed compressor) that the communication engine (trainers/overlap/comm_engine.hpp) moves on:
//   bucketed   the gradient is cut into buckets at layer boundaries, about config.bucket_bytes each; a bucket's
//              job starts as soon as the backward pass has finished its layers (the output layer's first), while
//              the pass computes the layers below. The step is the blocking one's: same update, same gradient;
//              each dense bucket is summed by the same method on a sub-span, so for ps (rank order) and for any
//              method on two ranks (a + b == b + a) the bits are the blocking path's; a ring on P > 2 ranks adds a
//              bucket's elements in an order that depends on where its segments fall, so it agrees to rounding.
//              A compressed bucket is compressed on its own tensors (trainers/gradient_compression/compressed_jobs.hpp).
//   pipelined  step t's gradient is summed while step t+1's is computed, and applied one step late (Pipe-SGD):
//              the update of step t uses the gradient computed on the parameters of step t-1.
//   blocking   the one job started and waited for inside step() (compression without overlap).
// Their state (Synchronizer::state_size and the rest) is the jobs'.
#include <memory>

#include "collectives/comm.hpp"
#include "model/sgd.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/synchronizer.hpp"
#include "trainers/overlap/gradient_jobs.hpp"

namespace gradsync {

// Each keeps `sgd` (which must outlive it) and `jobs`; `workers` only gives the worker count. Bucketed: jobs' ranges
// are bucket_ranges(); pipelined and blocking: one range, the whole gradient. Local. Refused combinations are
// validate()'s.
std::unique_ptr<Synchronizer> make_bucketed_sync(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                 std::unique_ptr<GradientJobs> jobs);
std::unique_ptr<Synchronizer> make_pipelined_sync(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                  std::unique_ptr<GradientJobs> jobs);
std::unique_ptr<Synchronizer> make_blocking_sync(const Comm& workers, Sgd& sgd, std::unique_ptr<GradientJobs> jobs);

}  // namespace gradsync
