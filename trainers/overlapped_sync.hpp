#pragma once
// Synchronous SGD whose gradient allreduce overlaps computation (trainers/comm_engine.hpp moves it on):
//   bucketed   the gradient is cut into buckets at layer boundaries, about config.bucket_bytes each; a bucket's
//              allreduce starts as soon as the backward pass has finished its layers (the output layer's first),
//              while the pass computes the layers below. The step is the blocking one's: same update, same
//              gradient; each bucket is summed by the same method on a sub-span, so for ps (rank order) and for any
//              method on two ranks (a + b == b + a) the bits are the blocking path's; a ring on P > 2 ranks adds a
//              bucket's elements in an order that depends on where its segments fall, so it agrees to rounding.
//   pipelined  step t's gradient is summed while step t+1's is computed, and applied one step late (Pipe-SGD):
//              the update of step t uses the gradient computed on the parameters of step t-1.
#include <memory>
#include <span>

#include "collectives/comm.hpp"
#include "model/sgd.hpp"
#include "trainers/synchronizer.hpp"
#include "trainers/train_config.hpp"

namespace gradsync {

// Both plan config.sync's allreduce on `workers` (collective as make_synchronizer says) and keep `sgd`, which must
// outlive them. Refused combinations are validate()'s.
std::unique_ptr<Synchronizer> make_bucketed_allreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd,
                                                      std::span<const std::size_t> layer_offsets,
                                                      std::size_t parameter_count);
std::unique_ptr<Synchronizer> make_pipelined_allreduce(const TrainConfig& config, const Comm& workers, Sgd& sgd);

}  // namespace gradsync
