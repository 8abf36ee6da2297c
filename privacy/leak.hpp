#pragma once
// What a dense layer's gradient gives away (issue 56, "the leak, shown"). For a fully connected layer z = W x + b,
// dL/dW_i = delta_i x^T and dL/db_i = delta_i for one example, so over a batch dL/dW_i = sum_n delta_ni x_n^T and
// dL/db_i = sum_n delta_ni (both over the same 1/B): where one example alone activates row i (ReLU leaves the others'
// delta_ni exactly 0), dW_i / db_i is that example's input exactly; where several do, it is their mixture weighted by
// their deltas. The ratio does not depend on the gradient's scale, so it reads a summed gradient, a mean one, or a
// fedavg update (the model's difference, lr times the summed gradients) alike. Local; no MPI.
//
// Recognisable means a PSNR of at least kRecognisedPsnrDb against the original, pixels in [0, 1]: 20 dB is an RMS
// error of 0.1 per pixel. On MNIST a blank image scores about 10 dB against a digit, uniform noise 5 dB, and the
// nearest of 256 other training digits 13.5 dB (the leak tool prints that floor, chance_psnr_mean), so 20 dB is far
// above what an unrelated image reaches, and such a reconstruction is the digit to the eye (the picture grids show
// it); the exact leak sits far higher (above 100 dB, float rounding only).
#include <cstddef>
#include <span>
#include <vector>

#include "model/layer_shape.hpp"

namespace gradsync {

inline constexpr double kRecognisedPsnrDb = 20;

// One row's reconstruction: the input row `row` of the layer saw, dW_row / db_row.
struct Reconstruction {
  std::size_t row = 0;
  double bias_gradient = 0;  // db_row, which it was divided by
  std::vector<float> x;      // layer.inputs values, not clamped
};

// The reconstructions of every row i of `layer` (a LayerShape of the model whose gradient, update or wire vector
// `grads` is: grads.size() >= layer.end()) with |db_i| > relative_threshold * max_i |db_i| and db_i != 0, in row
// order. relative_threshold >= 0. Empty when every db_i is 0 (a layer nobody's example activated, or all zeroed).
std::vector<Reconstruction> reconstruct_inputs(std::span<const float> grads, const LayerShape& layer,
                                               double relative_threshold);

// Peak signal-to-noise ratio of `guess` against `original` (equal sizes, non-empty; std::invalid_argument otherwise),
// in dB, with the guess clamped to [0, peak] first (what an attacker knowing the pixel range would show) and the
// original as given: 10 log10(peak^2 / MSE). An exact match gives +inf.
double psnr_db(std::span<const float> guess, std::span<const float> original, double peak = 1);

// How well a set of reconstructions recovers a batch.
struct LeakScore {
  std::size_t rows_used = 0;             // reconstructions considered
  std::size_t recovered = 0;             // originals whose best PSNR >= threshold
  std::vector<double> best_psnr;         // per original: the best PSNR of the reconstructions matched to it (-inf: none)
  std::vector<std::ptrdiff_t> best_row;  // per original: the index into the reconstructions of that best one, or -1
  // Mean of best_psnr over the originals: a missing one counts 0 dB, an exact one (+inf) 150 dB, so that it stays a
  // number (float32's rounding alone gives about 140 dB).
  double best_psnr_mean = 0;
};

// Matches each reconstruction to its nearest original (highest PSNR; the lower index on a tie) among `originals`
// (count x features, row-major, every reconstruction's x of `features` values; std::invalid_argument otherwise), and
// scores each original by the best reconstruction matched to it. `peak` as psnr_db's.
LeakScore score_reconstructions(std::span<const Reconstruction> reconstructions, std::span<const float> originals,
                                std::size_t features, double threshold_db = kRecognisedPsnrDb, double peak = 1);

}  // namespace gradsync
