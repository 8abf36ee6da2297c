#include "trainers/loop/replica_spread.hpp"

#include <algorithm>

#include "collectives/watchdog.hpp"

namespace gradsync {

void mean_model(const Comm& workers, std::span<const float> own, std::vector<float>& mean) {
  mean.assign(own.begin(), own.end());
  const WaitScope wait("MPI_Reduce and MPI_Bcast (the workers' mean model)");
  workers.sum_to(0, mean);
  if (workers.rank() == 0) {
    const float scale = 1.0f / static_cast<float>(workers.size());
    for (float& v : mean) v *= scale;
  }
  workers.broadcast(mean, 0);
}

ReplicaSpread replica_spread(const Comm& workers, std::span<const float> own, std::span<const float> mean,
                             const Model& model, const Dataset& test, Workspace& ws) {
  double squares = 0;
  for (std::size_t k = 0; k < own.size(); ++k) {
    const double d = static_cast<double>(own[k]) - static_cast<double>(mean[k]);
    squares += d * d;
  }
  const double accuracy = model.evaluate(own, test, ws).accuracy;
  const WaitScope wait("MPI_Allreduce (the spread of the workers' models)");
  ReplicaSpread spread;
  spread.consensus_distance = workers.sum(squares) / workers.size();
  spread.accuracy_min = workers.min(accuracy);
  spread.accuracy_max = workers.max(accuracy);
  return spread;
}

}  // namespace gradsync
