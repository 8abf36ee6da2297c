#pragma once
// How far apart the workers' own models are, for families whose workers keep one each (gossip): the consensus
// distance and the spread of their test accuracies, beside the accuracy of their mean (the model a run evaluates).
#include <span>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "model/model.hpp"

namespace gradsync {

struct ReplicaSpread {
  double consensus_distance = -1;  // (1/W) sum_i ||x_i - mean||^2; -1: the workers share one model
  double accuracy_min = -1;        // test accuracy of the worst and the best worker's own model
  double accuracy_max = -1;
};

// Collective over `workers`: `mean` (resized to own.size()) becomes the workers' mean model, the same bits on every
// worker (checkpoint holders compare them): the sum of their `own` models reduced to the first, times 1/W, broadcast.
void mean_model(const Comm& workers, std::span<const float> own, std::vector<float>& mean);

// Collective over `workers`, after mean_model(): the consensus distance around `mean` (summed in double) and the
// smallest and largest accuracy of the workers' own models on `test`. Every worker gets the same values.
ReplicaSpread replica_spread(const Comm& workers, std::span<const float> own, std::span<const float> mean,
                             const Model& model, const Dataset& test, Workspace& ws);

}  // namespace gradsync
