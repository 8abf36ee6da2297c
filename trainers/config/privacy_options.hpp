#pragma once
// What a run does to protect its workers' data (issue 56; the mechanisms are privacy/'s): DP-SGD's per-example
// clipping and noise, and secure aggregation of the gradients.
namespace gradsync {

struct PrivacyOptions {
  // DP-SGD (--dp-clip, --dp-noise, --dp-delta): each example's gradient clipped to norm dp_clip (0: off), and the sum
  // over the global batch noised with N(0, (dp_noise dp_clip)^2), each worker adding its share before the gradient
  // leaves it. dp_delta is the delta at which the run reports epsilon.
  double dp_clip = 0;
  double dp_noise = 0;
  double dp_delta = 1e-5;
  // --secure-aggregation: the gradients summed as masked fixed-point codes (privacy/secure_aggregator.hpp), each
  // clipped to [-secure_range, secure_range] first (0: the default, secure_range_for below).
  bool secure_aggregation = false;
  double secure_range = 0;

  bool dp() const { return dp_clip > 0; }
};

}  // namespace gradsync
