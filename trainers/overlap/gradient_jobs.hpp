#pragma once
// What a synchronizer that moves its gradient through the communication engine (trainers/overlap/overlapped_sync.hpp)
// enqueues: one job per range of the gradient (a bucket, or the whole gradient), and the training state those jobs
// keep. Dense: each range's allreduce (here); compressed: each range's error-fed compressor
// (trainers/gradient_compression/compressed_jobs.hpp).
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/comm.hpp"
#include "model/layer_shape.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/overlap/comm_engine.hpp"

namespace gradsync {

// A job on one range of the gradient: set_data() hands it the range's floats (the caller's, left to the job until
// it completes) before each start().
class RangeJob : public CommJob {
 public:
  virtual void set_data(std::span<float> data) = 0;
};

class GradientJobs {
 public:
  virtual ~GradientJobs() = default;
  // The ranges of the gradient, in the order their jobs are enqueued every step (a backward pass's: the output
  // layer's first); they tile the gradient.
  virtual std::span<const ElementRange> ranges() const = 0;
  // Range i's job, owned by this object.
  virtual RangeJob& job(std::size_t i) = 0;
  // Synchronizer::state_size, save_state and load_state (trainers/core/synchronizer.hpp) for these jobs' state, with
  // none of them in flight. Dense jobs keep none.
  virtual std::size_t state_size() const { return 0; }
  virtual void save_state(std::span<float> /*out*/) {}
  virtual void load_state(std::span<const float> /*saved*/, int /*saved_workers*/, int /*index*/) {}
};

// The gradient's buckets for --buckets, from the output layer down (the output layer's bucket first): a bucket is
// closed once it holds `bucket_bytes` (the input layer's start closes the last). `layers`: the model's layers in a
// gradient of `count` floats (Model::layers()). Without `between_rows` buckets hold whole layers (a compressor works
// on whole tensors). With it a layer's weights may also be cut between rows into pieces of at least bucket_bytes
// and kMinBucketRows rows: the backward pass may report a weight gradient's rows a block at a time from the last
// (model/model.hpp's PassObserver), so a piece ships while the rows above it are computed, and the input layer's
// gradient, the last one computed, is not all left to the end of the pass. Local.
inline constexpr std::size_t kMinBucketRows = 16;
std::vector<ElementRange> bucket_ranges(std::size_t bucket_bytes, std::span<const LayerShape> layers, std::size_t count,
                                        bool between_rows = false);

// The ranges a synchronizer for `config` cuts a gradient of `count` floats into: bucket_ranges() with
// config.buckets, else one range, the whole gradient. Local.
std::vector<ElementRange> gradient_ranges(const TrainConfig& config, std::span<const LayerShape> layers,
                                          std::size_t count, bool between_rows = false);

// Dense: range i summed by config.sync's allreduce, one object per range, planned on `workers` (collective as
// make_synchronizer says).
std::unique_ptr<GradientJobs> make_allreduce_jobs(const TrainConfig& config, const Comm& workers,
                                                  std::vector<ElementRange> ranges);

}  // namespace gradsync
