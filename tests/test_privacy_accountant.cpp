// The RDP accountant (privacy/rdp_accountant.hpp): against the published MNIST epsilons of Opacus and TensorFlow
// Privacy, and against the Renyi divergence of the sampled Gaussian mechanism computed here by numerical
// integration, from its definition.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "privacy/rdp_accountant.hpp"

namespace gradsync {
namespace {

// log A_alpha = log E_{z ~ N(0, s^2)} [(mu(z) / mu0(z))^alpha], mu = (1 - q) N(0, s^2) + q N(1, s^2), mu0 = N(0, s^2):
// Simpson's rule on the log integrand, shifted by its maximum, over [-16 s - 1, alpha + 16 s + 1] (the integrand
// peaks near z = alpha), 40 points per s.
double integrated_log_a(double q, double s, double alpha) {
  const double lo = -16 * s - 1, hi = alpha + 16 * s + 1;
  const auto steps = static_cast<std::size_t>(std::ceil((hi - lo) / s * 40)) * 2;  // even
  const double h = (hi - lo) / static_cast<double>(steps);
  const auto log_f = [&](double z) {
    const double t = (2 * z - 1) / (2 * s * s);
    const double a = std::log1p(-q), b = std::log(q) + t;  // log((1 - q) + q e^t)
    const double ratio = std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)));
    return -z * z / (2 * s * s) - std::log(s * std::sqrt(2 * 3.14159265358979323846)) + alpha * ratio;
  };
  std::vector<double> logs(steps + 1);
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i <= steps; ++i) top = std::max(top, logs[i] = log_f(lo + h * static_cast<double>(i)));
  double sum = 0;
  for (std::size_t i = 0; i <= steps; ++i) {
    const double w = (i == 0 || i == steps) ? 1 : (i % 2 ? 4 : 2);
    sum += w * std::exp(logs[i] - top);
  }
  return top + std::log(sum * h / 3);
}

}  // namespace

TEST_CASE("privacy accountant: Opacus' and TF Privacy's published MNIST epsilons, to their two decimals") {
  // Their MNIST runs: 60,000 examples, batches of 256 (rate 256/60000), 234 steps an epoch (the last partial batch
  // dropped), delta 1e-5, Opacus' orders; the tables were computed with the classic conversion.
  const double q = 256.0 / 60000;
  struct Published {
    double sigma;
    std::uint64_t epochs;
    double epsilon;
  };
  for (const Published& p : {Published{1.1, 60, 3.01}, Published{1.3, 15, 1.19}, Published{0.7, 45, 7.10}}) {
    CAPTURE(p.sigma);
    const auto classic = dp_sgd_epsilon(q, p.sigma, p.epochs * 234, 1e-5, opacus_orders(), RdpConversion::classic);
    CHECK(std::round(classic.epsilon * 100) / 100 == doctest::Approx(p.epsilon).epsilon(1e-12));
    // The improved conversion is tighter at the same RDP.
    const auto improved = dp_sgd_epsilon(q, p.sigma, p.epochs * 234, 1e-5, opacus_orders(), RdpConversion::improved);
    CHECK(improved.epsilon < classic.epsilon - 0.1);
  }
}

TEST_CASE("privacy accountant: the sampled Gaussian's RDP equals its numerically integrated Renyi divergence") {
  for (const double sigma : {0.7, 1.1, 2.0, 4.0})
    for (const double q : {256.0 / 60000, 0.01, 0.1, 0.5})
      for (const double alpha : {1.1, 1.5, 2.0, 3.0, 4.5, 8.0, 17.5, 32.0}) {
        CAPTURE(sigma);
        CAPTURE(q);
        CAPTURE(alpha);
        const double expected = integrated_log_a(q, sigma, alpha) / (alpha - 1);
        CHECK(sampled_gaussian_rdp(q, sigma, alpha) == doctest::Approx(expected).epsilon(1e-7));
      }
  CHECK(sampled_gaussian_rdp(0, 1, 2) == 0);
  CHECK(sampled_gaussian_rdp(1, 2, 3) == doctest::Approx(3.0 / 8));
  CHECK(std::isinf(sampled_gaussian_rdp(0.1, 0, 2)));
  CHECK_THROWS_AS(sampled_gaussian_rdp(0.1, 1, 1.0), std::invalid_argument);
}

TEST_CASE("privacy accountant: epsilon over steps and orders against the integrated RDP") {
  const std::vector<double> orders = {1.5, 2, 2.5, 3, 4, 6, 8, 12, 16, 24, 32};
  for (const double sigma : {0.8, 1.1, 1.5})
    for (const double q : {0.004, 0.02})
      for (const std::uint64_t steps : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{10000}})
        for (const double delta : {1e-5, 1e-3}) {
          double best = std::numeric_limits<double>::infinity(), best_classic = best;
          for (const double a : orders) {
            const double rdp = static_cast<double>(steps) * integrated_log_a(q, sigma, a) / (a - 1);
            best = std::min(best, rdp - (std::log(delta) + std::log(a)) / (a - 1) + std::log((a - 1) / a));
            best_classic = std::min(best_classic, rdp + std::log(1 / delta) / (a - 1));
          }
          CAPTURE(sigma);
          CAPTURE(q);
          CAPTURE(steps);
          CHECK(dp_sgd_epsilon(q, sigma, steps, delta, orders).epsilon ==
                doctest::Approx(std::max(best, 0.0)).epsilon(1e-6));
          CHECK(dp_sgd_epsilon(q, sigma, steps, delta, orders, RdpConversion::classic).epsilon ==
                doctest::Approx(std::max(best_classic, 0.0)).epsilon(1e-6));
        }
}

}  // namespace gradsync
