#pragma once
// Model poisoning: what a malicious worker sends instead of its honest gradient. Pure functions; `out` may be the
// same span as the honest input (in place). Sizes: every span has the gradient's length.
//
// Which information they use: sign-flip and gaussian only the worker's own gradient (or nothing). alie and ipm use
// the colluders' statistics: the mean (and standard deviation) of the malicious workers' own honest gradients, each
// computed as an honest worker would on its own batch and pooled among the malicious ranks (ColluderMoments,
// colluders.hpp). They never see an honest worker's gradient: the realistic, non-omniscient threat model of Baruch
// et al. (the omniscient variant, with every gradient, is stronger and not built).
#include <cstdint>
#include <span>

namespace gradsync {

// out = -s * honest, elementwise (the float product).
void sign_flip(std::span<const float> honest, float s, std::span<float> out);
// out[j] = sigma * N(0, 1), drawn from Rng(seed, stream) (model/rng.hpp) by Box-Muller: the same values on every
// machine for the same (seed, stream). The honest gradient is discarded (Blanchard et al. 2017's Gaussian
// Byzantine worker). The caller makes `stream` differ per step and per worker.
void gaussian_noise(float sigma, std::uint64_t seed, std::uint64_t stream, std::span<float> out);
// ALIE's z_max for n workers of which f are malicious (Baruch et al. 2019, section 3): the s = floor(n / 2 + 1) - f
// honest workers the attackers need on their side, z = Phi^{-1}((n - s) / n). Requires 0 <= f < n and n - s > 0
// (std::invalid_argument naming n, f and s otherwise).
double alie_z(int n, int f);
// out[j] = mean[j] - z * std[j].
void alie(std::span<const float> mean, std::span<const float> std, double z, std::span<float> out);
// out = -eps * mean (Xie et al. 2020), with `mean` the colluders' mean gradient.
void ipm(std::span<const float> mean, float eps, std::span<float> out);

}  // namespace gradsync
