#include "privacy/rdp_accountant.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace gradsync {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log(e^a + e^b) and log(e^a - e^b) (a >= b), without overflow; -inf is log(0).
double log_add(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double hi = std::max(a, b);
  return hi + std::log1p(std::exp(-std::abs(a - b)));
}
double log_sub(double a, double b) {
  if (b == -kInf) return a;
  if (b >= a) return -kInf;  // rounding: the series' partial sums cancel to nothing
  return a + std::log1p(-std::exp(b - a));
}

// log(erfc(x)); erfc underflows near x = 26, where the asymptotic series takes over.
double log_erfc(double x) {
  if (x < 25) return std::log(std::erfc(x));
  const double inv = 1 / (x * x);
  return -x * x - std::log(x) - 0.5 * std::log(std::numbers::pi) + std::log1p(-0.5 * inv + 0.75 * inv * inv);
}

double log_binomial(double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); }

// log A_alpha for an integer alpha: sum_i C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2)).
double log_a_integer(double q, double sigma, std::uint64_t alpha) {
  double log_a = -kInf;
  const auto a = static_cast<double>(alpha);
  for (std::uint64_t i = 0; i <= alpha; ++i) {
    const auto di = static_cast<double>(i);
    const double term =
        log_binomial(a, di) + di * std::log(q) + (a - di) * std::log1p(-q) + (di * di - di) / (2 * sigma * sigma);
    log_a = log_add(log_a, term);
  }
  return log_a;
}

// log A_alpha for a fractional alpha: the two series of the paper's Section 3.3, the generalized binomial
// coefficients' signs alternating once i > alpha.
double log_a_fractional(double q, double sigma, double alpha) {
  double log_a0 = -kInf, log_a1 = -kInf;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  double log_coef = 0, sign = 1;  // log |C(alpha, i)| and its sign, for i = 0
  for (std::uint64_t i = 0;; ++i) {
    const auto di = static_cast<double>(i);
    const double j = alpha - di;
    const double log_t0 = log_coef + di * std::log(q) + j * std::log1p(-q);
    const double log_t1 = log_coef + j * std::log(q) + di * std::log1p(-q);
    const double log_e0 = std::log(0.5) + log_erfc((di - z0) / (std::numbers::sqrt2 * sigma));
    const double log_e1 = std::log(0.5) + log_erfc((z0 - j) / (std::numbers::sqrt2 * sigma));
    const double log_s0 = log_t0 + (di * di - di) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (sign > 0) {
      log_a0 = log_add(log_a0, log_s0);
      log_a1 = log_add(log_a1, log_s1);
    } else {
      log_a0 = log_sub(log_a0, log_s0);
      log_a1 = log_sub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30) break;
    if (i > 100000)
      throw std::runtime_error(
          fmt::format("sampled_gaussian_rdp: the series at order {} did not "
                      "converge (q {}, sigma {})",
                      alpha, q, sigma));
    // C(alpha, i + 1) = C(alpha, i) (alpha - i) / (i + 1)
    const double factor = alpha - di;
    if (factor < 0) sign = -sign;
    log_coef += std::log(std::abs(factor)) - std::log(di + 1);
  }
  return log_add(log_a0, log_a1);
}

constexpr std::array<double, 151> opacus_grid() {
  std::array<double, 151> orders{};
  for (std::size_t x = 1; x < 100; ++x) orders[x - 1] = 1 + static_cast<double>(x) / 10;
  for (std::size_t a = 12; a < 64; ++a) orders[99 + a - 12] = static_cast<double>(a);
  return orders;
}
constexpr auto kOpacusOrders = opacus_grid();
constexpr double kTfOrders[] = {1.25, 1.5, 1.75, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 28, 32, 64, 256};

}  // namespace

std::span<const double> opacus_orders() { return kOpacusOrders; }
std::span<const double> tf_privacy_orders() { return kTfOrders; }

double sampled_gaussian_rdp(double q, double sigma, double alpha) {
  if (!(alpha > 1) || !(q >= 0 && q <= 1) || !(sigma >= 0))
    throw std::invalid_argument(fmt::format(
        "sampled_gaussian_rdp: needs order > 1, rate in [0, 1] and sigma >= 0, not order {}, rate {}, sigma {}", alpha, q,
        sigma));
  if (q == 0) return 0;
  if (sigma == 0 || std::isinf(alpha)) return kInf;
  if (q == 1) return alpha / (2 * sigma * sigma);  // the Gaussian mechanism itself
  const double log_a = alpha == std::floor(alpha) ? log_a_integer(q, sigma, static_cast<std::uint64_t>(alpha))
                                                  : log_a_fractional(q, sigma, alpha);
  return log_a / (alpha - 1);
}

std::string_view conversion_name(RdpConversion c) { return c == RdpConversion::classic ? "classic" : "improved"; }

double epsilon_at_order(double rdp, double alpha, double delta, RdpConversion conversion) {
  if (conversion == RdpConversion::classic) return rdp - std::log(delta) / (alpha - 1);
  return rdp - (std::log(delta) + std::log(alpha)) / (alpha - 1) + std::log((alpha - 1) / alpha);
}

PrivacySpent dp_sgd_epsilon(double q, double sigma, std::uint64_t steps, double delta, std::span<const double> orders,
                            RdpConversion conversion) {
  if (!(delta > 0 && delta < 1) || orders.empty())
    throw std::invalid_argument(fmt::format(
        "dp_sgd_epsilon: needs 0 < delta < 1 and at least one order, not delta {} with {} orders", delta, orders.size()));
  PrivacySpent best{kInf, orders.front()};
  for (const double alpha : orders) {
    const double rdp = static_cast<double>(steps) * sampled_gaussian_rdp(q, sigma, alpha);
    const double eps = epsilon_at_order(rdp, alpha, delta, conversion);
    if (eps < best.epsilon) best = {eps, alpha};
  }
  best.epsilon = std::max(best.epsilon, 0.0);
  return best;
}

}  // namespace gradsync
