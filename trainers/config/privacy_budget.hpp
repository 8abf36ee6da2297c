#pragma once
// What a run's privacy options mean in numbers: the epsilon DP-SGD has spent, and the range secure aggregation
// quantizes to. Local, on any rank.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trainers/config/privacy_options.hpp"

namespace gradsync {

struct TrainConfig;

// DP-SGD's sampling rate: the global batch (per-worker batch x workers) over the training rows, at most 1. The run
// takes shuffled fixed-size batches, not Poisson samples; the accountant (privacy/rdp_accountant.hpp) treats each
// step as a Poisson sample at this rate, as Opacus and TensorFlow Privacy's tutorials do.
double dp_sampling_rate(std::size_t global_batch, std::size_t train_rows);

// Epsilon at o.dp_delta after `steps` global steps at rate q (improved conversion, Opacus' orders); +inf with
// dp_noise 0. -1 when DP is off.
double dp_epsilon_after(const PrivacyOptions& o, double q, std::uint64_t steps);

// The fixed-point range of secure aggregation on `workers` workers whose per-worker batch is `batch`: secure_range
// when given; with DP, the clip plus 8 standard deviations of a worker's noise share (a coordinate of a worker's
// mean of clipped gradients is at most the clip; its noise share rarely passes 8 sigma); else 1.
double secure_range_for(const PrivacyOptions& o, int workers, std::size_t batch);

// Checks of the privacy options against the rest of the configuration: empty, or a one-line message naming the flag.
std::string validate_privacy(const TrainConfig& config);

}  // namespace gradsync
