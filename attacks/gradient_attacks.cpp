#include "attacks/gradient_attacks.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "attacks/normal_quantile.hpp"
#include "model/rng.hpp"

namespace gradsync {

void sign_flip(std::span<const float> honest, float s, std::span<float> out) {
  for (std::size_t j = 0; j < honest.size(); ++j) out[j] = -s * honest[j];
}

void gaussian_noise(float sigma, std::uint64_t seed, std::uint64_t stream, std::span<float> out) {
  Rng rng(seed, stream);
  for (std::size_t j = 0; j < out.size(); j += 2) {
    // 1 - uniform() is in (0, 1]: the logarithm stays finite.
    const double radius = std::sqrt(-2 * std::log(1.0 - rng.uniform())), angle = 2 * std::numbers::pi * rng.uniform();
    out[j] = static_cast<float>(sigma * radius * std::cos(angle));
    if (j + 1 < out.size()) out[j + 1] = static_cast<float>(sigma * radius * std::sin(angle));
  }
}

double alie_z(int n, int f) {
  const int s = n / 2 + 1 - f;  // floor(n / 2 + 1) for n >= 0
  if (f < 0 || f >= n || n - s <= 0 || s <= 0)
    throw std::invalid_argument(fmt::format(
        "alie: n = {} workers with f = {} malicious give s = floor(n/2 + 1) - f = {}, outside 1 .. n - 1", n, f, s));
  return normal_quantile(static_cast<double>(n - s) / n);
}

void alie(std::span<const float> mean, std::span<const float> std, double z, std::span<float> out) {
  for (std::size_t j = 0; j < mean.size(); ++j) out[j] = static_cast<float>(mean[j] - z * std[j]);
}

void ipm(std::span<const float> mean, float eps, std::span<float> out) {
  for (std::size_t j = 0; j < mean.size(); ++j) out[j] = -eps * mean[j];
}

}  // namespace gradsync
