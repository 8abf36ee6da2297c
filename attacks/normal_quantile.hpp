#pragma once
// The standard normal distribution's CDF and its inverse, for ALIE's z (gradient_attacks.hpp).

namespace gradsync {

// Phi(x) = P(N(0, 1) <= x).
double normal_cdf(double x);
// Phi^{-1}(p) for 0 < p < 1, to about 1e-15 relative: Acklam's rational approximation (relative error below
// 1.15e-9), then one Halley step on Phi(x) - p. Throws std::invalid_argument outside (0, 1).
double normal_quantile(double p);

}  // namespace gradsync
