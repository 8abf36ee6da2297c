#include "privacy/norm_clipping.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace gradsync {

double clip_to_norm(std::span<float> values, double clip) {
  if (!(clip > 0) || !std::isfinite(clip))
    throw std::invalid_argument(fmt::format("clip_to_norm: clip norm {} (needs > 0)", clip));
  double sq = 0;
  for (const float v : values) sq += static_cast<double>(v) * v;
  const double norm = std::sqrt(sq);
  if (norm > clip) {
    const auto scale = static_cast<float>(clip / norm);
    for (float& v : values) v *= scale;
  }
  return norm;
}

}  // namespace gradsync
