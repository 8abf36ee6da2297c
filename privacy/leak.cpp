#include "privacy/leak.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gradsync {

std::vector<Reconstruction> reconstruct_inputs(std::span<const float> grads, const LayerShape& layer,
                                               double relative_threshold) {
  if (grads.size() < layer.end())
    throw std::invalid_argument(
        fmt::format("reconstruct_inputs: {} values for a layer ending at {}", grads.size(), layer.end()));
  if (!(relative_threshold >= 0))
    throw std::invalid_argument(fmt::format("reconstruct_inputs: threshold {} < 0", relative_threshold));
  const float* db = grads.data() + layer.bias_offset();
  double largest = 0;
  for (std::size_t i = 0; i < layer.outputs; ++i)
    if (std::isfinite(db[i])) largest = std::max(largest, std::fabs(static_cast<double>(db[i])));
  std::vector<Reconstruction> out;
  for (std::size_t i = 0; i < layer.outputs; ++i) {
    const double b = db[i];
    if (b == 0 || !std::isfinite(b) || std::fabs(b) <= relative_threshold * largest) continue;
    Reconstruction r{.row = i, .bias_gradient = b, .x = std::vector<float>(layer.inputs)};
    const float* dw = grads.data() + layer.offset + i * layer.inputs;
    // In float, as the attacker reading float32 off the wire would: exact up to one rounding of dW = delta x.
    const float bf = db[i];
    for (std::size_t j = 0; j < layer.inputs; ++j) r.x[j] = dw[j] / bf;
    out.push_back(std::move(r));
  }
  return out;
}

double psnr_db(std::span<const float> guess, std::span<const float> original, double peak) {
  if (guess.size() != original.size() || guess.empty())
    throw std::invalid_argument(fmt::format("psnr_db: {} values against {}", guess.size(), original.size()));
  double squared = 0;
  for (std::size_t i = 0; i < guess.size(); ++i) {
    const double g = std::isnan(guess[i]) ? 0.0 : std::clamp(static_cast<double>(guess[i]), 0.0, peak);
    const double d = g - original[i];
    squared += d * d;
  }
  const double mse = squared / static_cast<double>(guess.size());
  return mse == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(peak * peak / mse);
}

LeakScore score_reconstructions(std::span<const Reconstruction> reconstructions, std::span<const float> originals,
                                std::size_t features, double threshold_db, double peak) {
  if (features == 0 || originals.size() % features != 0 || originals.empty())
    throw std::invalid_argument(
        fmt::format("score_reconstructions: {} original values of {} features", originals.size(), features));
  const std::size_t count = originals.size() / features;
  LeakScore s{.rows_used = reconstructions.size(),
              .best_psnr = std::vector<double>(count, -std::numeric_limits<double>::infinity()),
              .best_row = std::vector<std::ptrdiff_t>(count, -1)};
  for (std::size_t r = 0; r < reconstructions.size(); ++r) {
    if (reconstructions[r].x.size() != features)
      throw std::invalid_argument(fmt::format("score_reconstructions: reconstruction {} has {} values, not {}", r,
                                              reconstructions[r].x.size(), features));
    std::size_t nearest = 0;
    double nearest_db = -std::numeric_limits<double>::infinity();
    for (std::size_t n = 0; n < count; ++n) {
      const double db = psnr_db(reconstructions[r].x, originals.subspan(n * features, features), peak);
      if (db > nearest_db) nearest = n, nearest_db = db;
    }
    if (nearest_db > s.best_psnr[nearest]) {
      s.best_psnr[nearest] = nearest_db;
      s.best_row[nearest] = static_cast<std::ptrdiff_t>(r);
    }
  }
  double sum = 0;
  for (const double db : s.best_psnr) {
    if (db >= threshold_db) ++s.recovered;
    // An exact match is +inf; the mean caps it at float32's own resolution so that it stays a number.
    sum += std::isfinite(db) ? db : (db > 0 ? 150.0 : 0.0);
  }
  s.best_psnr_mean = sum / static_cast<double>(count);
  return s;
}

}  // namespace gradsync
