#pragma once
// The malicious workers' pooled statistics for alie and ipm (gradient_attacks.hpp): the coordinate-wise mean and
// standard deviation of their own honest gradients, over a communicator of the malicious ranks only (the trainer
// splits it off: Comm::split with a colour for "malicious"). Honest ranks take no part.
#include <span>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

class ColluderMoments {
 public:
  // Local. `colluders` holds exactly the malicious ranks.
  explicit ColluderMoments(Comm colluders) : comm_(std::move(colluders)) {}

  // Collective over the colluders, every one with a gradient of the same length: afterwards mean() and std() hold,
  // on every colluder alike, the mean and the standard deviation (divided by m - 1, the sample deviation, as
  // torch.std; 0 for a single colluder) of the m colluders' `mine` per coordinate. Two MPI_Allreduce calls in double
  // (the sums, then the squared deviations from the mean). Buffers grow on the first call of a length.
  void run(std::span<const float> mine);
  std::span<const float> mean() const { return mean_; }
  std::span<const float> std() const { return std_; }

 private:
  Comm comm_;
  std::vector<double> sums_;
  std::vector<float> mean_, std_;
};

}  // namespace gradsync
