#include "privacy/gaussian_noise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace gradsync {

double noise_share_std(double sigma, double clip, int workers, double denominator) {
  if (!(sigma >= 0) || !(clip > 0) || workers < 1 || !(denominator > 0))
    throw std::invalid_argument(
        fmt::format("noise_share_std: needs sigma >= 0, clip > 0, workers >= 1 and denominator > 0, not {}, {}, {}, {}",
                    sigma, clip, workers, denominator));
  return sigma * clip / (std::sqrt(static_cast<double>(workers)) * denominator);
}

GaussianNoise::GaussianNoise(std::uint64_t seed, int worker)
    : rng_(seed, 0xD9'0000'0000ULL + static_cast<std::uint64_t>(worker)) {}

void GaussianNoise::add(std::span<float> values, double stddev) {
  if (!(stddev >= 0)) throw std::invalid_argument(fmt::format("GaussianNoise::add: stddev {}", stddev));
  for (float& v : values) {
    double z;
    if (has_spare_) {
      z = spare_;
      has_spare_ = false;
    } else {
      // Box-Muller on two 53-bit uniforms; u1 in (0, 1] so the log is finite.
      const double u1 = static_cast<double>((rng_.next() >> 11) + 1) * 0x1.0p-53;
      const double u2 = static_cast<double>(rng_.next() >> 11) * 0x1.0p-53;
      const double r = std::sqrt(-2 * std::log(u1));
      z = r * std::cos(2 * std::numbers::pi * u2);
      spare_ = r * std::sin(2 * std::numbers::pi * u2);
      has_spare_ = true;
    }
    v = static_cast<float>(v + stddev * z);
  }
}

}  // namespace gradsync
