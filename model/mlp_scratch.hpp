#pragma once
// What an Mlp keeps in a Workspace (model/mlp.hpp): shared by its plain pass (mlp.cpp) and its per-example clipping
// pass (mlp_clipped.cpp). Private to model/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/dataset.hpp"
#include "model/mlp.hpp"
#include "model/model.hpp"

namespace gradsync {

// Activations, the backward pass's deltas and evaluation's batches, for batches of up to max_batch examples.
struct Mlp::Scratch final : Workspace::Scratch {
  Scratch(const std::vector<std::size_t>& model_sizes, std::size_t max_batch)
      : sizes(model_sizes), eval_batch(std::min(max_batch, kEvaluationBatch), sizes.front()),
        eval_indices(std::min(max_batch, kEvaluationBatch)) {
    std::size_t widest = 0;
    for (std::size_t l = 1; l < sizes.size(); ++l) {
      activations.emplace_back(max_batch * sizes[l]);
      widest = std::max(widest, sizes[l]);
    }
    delta_a.resize(max_batch * widest);
    delta_b.resize(max_batch * widest);
    for (std::size_t l = 1; l < sizes.size(); ++l) layer_deltas.emplace_back(max_batch * sizes[l]);
    example_sq_norms.resize(max_batch);
    layer_sq_norms.resize(max_batch);
    input_sq_norms.resize(max_batch);
    example_scales.resize(max_batch);
  }
  std::vector<std::size_t> sizes;               // of the model it was made for
  std::vector<std::vector<float>> activations;  // [l] = sizes[l+1] x batch, post-activation (probabilities last)
  std::vector<float> delta_a, delta_b;          // ping-pong buffers for dLoss/dZ, widest layer x batch
  // Per-example clipping's (model/mlp_clipped.cpp): every layer's deltas at once, [l] = sizes[l+1] x batch, since
  // each example's norm needs all of them before any weight gradient is formed; per-example sums and scales.
  std::vector<std::vector<float>> layer_deltas;
  std::vector<double> example_sq_norms, layer_sq_norms, input_sq_norms;
  std::vector<float> example_scales;
  Batch eval_batch;  // evaluation gathers its own batches
  std::vector<std::uint32_t> eval_indices;
};

}  // namespace gradsync
