#pragma once
// The privacy spent by DP-SGD: Renyi differential privacy (RDP) of the sampled Gaussian mechanism (Mironov, Talwar
// and Zhang 2019, "Renyi Differential Privacy of the Sampled Gaussian Mechanism"), composed over steps and converted
// to (epsilon, delta). A step releases the sum of a Poisson sample (each example in with probability q) of gradients
// clipped to norm C, plus N(0, sigma^2 C^2) noise; its RDP at order alpha is log(A_alpha) / (alpha - 1), with A_alpha
// = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha], and RDP adds up over steps.
#include <cstdint>
#include <span>
#include <string_view>

namespace gradsync {

// The orders Opacus' RDP accountant tries: 1.1, 1.2, ..., 10.9, then 12, 13, ..., 63 (its DEFAULT_ALPHAS).
std::span<const double> opacus_orders();
// The orders TensorFlow Privacy's tutorials try: 1.25, 1.5, 1.75, 2..10, 12, 14, 16, 20, 24, 28, 32, 64, 256.
std::span<const double> tf_privacy_orders();

// RDP of one step at order `alpha` > 1, with sampling rate q in [0, 1] and noise multiplier sigma >= 0 (the noise's
// standard deviation over the clip norm). Integer orders use the binomial expansion of A_alpha (a finite sum);
// fractional orders its series split at z0 = sigma^2 log(1/q - 1) + 1/2 (the paper's Section 3.3), summed until
// both halves' terms fall below e^-30 of the scale. 0 when q = 0, +inf when sigma = 0 and q > 0. Throws
// std::invalid_argument for alpha <= 1, q outside [0, 1] or sigma < 0.
double sampled_gaussian_rdp(double q, double sigma, double alpha);

// RDP to (epsilon, delta), for one order. classic: Mironov 2017 Proposition 3, eps = rdp + log(1/delta)/(alpha-1),
// what Opacus and TensorFlow Privacy used up to 2020 and what their published MNIST tables were computed with.
// improved: Balle et al. 2020 (Hypothesis testing interpretations and Renyi DP, Theorem 21), eps = rdp -
// (log(delta) + log(alpha))/(alpha - 1) + log((alpha - 1)/alpha), what both use today; never larger than classic
// for alpha > 1.
enum class RdpConversion : std::uint8_t { classic, improved };
std::string_view conversion_name(RdpConversion c);  // "classic", "improved"
double epsilon_at_order(double rdp, double alpha, double delta, RdpConversion conversion);

struct PrivacySpent {
  double epsilon = 0;  // the smallest over the orders tried, at least 0
  double order = 0;    // the order that gave it
};

// Epsilon at `delta` (0 < delta < 1) after `steps` steps of the sampled Gaussian mechanism with rate q and noise
// multiplier sigma, minimized over `orders` (each > 1; std::invalid_argument otherwise or if empty).
PrivacySpent dp_sgd_epsilon(double q, double sigma, std::uint64_t steps, double delta,
                            std::span<const double> orders = opacus_orders(),
                            RdpConversion conversion = RdpConversion::improved);

}  // namespace gradsync
