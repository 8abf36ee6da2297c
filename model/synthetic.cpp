#include "model/synthetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/rng.hpp"

namespace gradsync {

Dataset make_blobs(std::size_t rows, std::size_t features, int classes, float noise, std::uint64_t seed,
                   std::uint64_t sample_stream) {
  if (classes < 1 || classes > 256)
    throw std::invalid_argument(fmt::format("make_blobs: {} classes; labels are bytes, so 1..256", classes));
  Rng prototype_rng(seed, 7);
  std::vector<float> prototypes(static_cast<std::size_t>(classes) * features);
  for (float& p : prototypes) p = prototype_rng.uniform();
  Rng rng(seed, 8 + sample_stream);
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.classes = classes;
  std::vector<std::uint8_t> pixels(rows * features);
  d.labels.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    const auto label = static_cast<std::uint8_t>(rng.below(static_cast<std::size_t>(classes)));
    d.labels[i] = label;
    const float* proto = &prototypes[label * features];
    for (std::size_t j = 0; j < features; ++j)
      pixels[i * features + j] = static_cast<std::uint8_t>(
          std::lround(255 * std::clamp(proto[j] + noise * (2 * rng.uniform() - 1), 0.0f, 1.0f)));
  }
  d.pixels = std::move(pixels);
  return d;
}

}  // namespace gradsync
