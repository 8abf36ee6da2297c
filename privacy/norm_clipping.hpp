#pragma once
// User-level DP for federated averaging (McMahan et al. 2018, "Learning Differentially Private Recurrent Language
// Models"): each client's whole update is clipped to norm C before it leaves the client, then the sum is noised as
// DP-SGD's is (privacy/gaussian_noise.hpp), with the accountant's rate the fraction of clients in a round.
#include <span>

namespace gradsync {

// Scales `values` by min(1, clip / ||values||) and returns ||values|| before (summed in double). clip > 0
// (std::invalid_argument). Left untouched, bit for bit, when the norm is at most clip.
double clip_to_norm(std::span<float> values, double clip);

}  // namespace gradsync
