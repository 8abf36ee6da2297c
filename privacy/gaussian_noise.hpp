#pragma once
// DP-SGD's Gaussian noise, shared among workers: the released sum of clipped gradients carries N(0, (sigma C)^2) per
// coordinate when each of p workers adds an independent N(0, (sigma C)^2 / p) to its own part before it leaves the
// worker (before masking, under secure aggregation), so no worker's un-noised gradient need leave it.
// Draws come from xoshiro256** (model/rng.hpp) through Box-Muller in double: statistically good and reproducible
// from the seed, not cryptographic (an adversary who learns a worker's seed can subtract its noise). Seed each
// worker differently (the stream below takes the rank) and from a secret per run for a deployment.
#include <cstdint>
#include <span>

#include "model/rng.hpp"

namespace gradsync {

// The standard deviation of one worker's share on a buffer that is the sum of clipped gradients divided by
// `denominator` (the batch size the trainer divides by; 1 for a plain sum): sigma clip / (sqrt(workers)
// denominator). sigma >= 0, clip > 0, workers >= 1, denominator > 0 (std::invalid_argument otherwise).
double noise_share_std(double sigma, double clip, int workers, double denominator = 1);

class GaussianNoise {
 public:
  // Draws for worker `worker` of a run seeded `seed`; distinct workers draw independent streams.
  GaussianNoise(std::uint64_t seed, int worker);
  // values[i] += stddev * N(0, 1), independent draws. stddev >= 0. Allocates nothing.
  void add(std::span<float> values, double stddev);

 private:
  Rng rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace gradsync
