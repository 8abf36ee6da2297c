#pragma once
// What `train` prints about Byzantine workers and the defences (config.robust): who attacks and how, before training;
// after it, the final model's accuracy under --eval-attack and the backdoor's success rate.
#include <span>
#include <string>
#include <vector>

#include "model/dataset.hpp"
#include "model/model.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

// "byzantine: the last 1 of 4 workers (rank 3) run sign-flip; gradients aggregated by median", or empty when no
// worker attacks and the aggregation is the mean. Local.
std::string describe_robustness(const TrainConfig& config, int ranks);

// --eval-attack on a model that has no input gradient (the CNN, so far): the refusal naming the flag; else empty.
// Local.
std::string check_eval_attack(const TrainConfig& config, const Model& model);

// After training, on the rank that reports (`params` the final model): "under fgsm:0.1: test accuracy 0.0123 (clean
// 0.9170)" with --eval-attack, and "backdoor: attack success rate 0.8731 (target 0 on 9020 triggered test images)"
// with --attack backdoor; no lines without either. Local.
std::vector<std::string> robustness_lines(const TrainConfig& config, const Model& model, std::span<const float> params,
                                          const TrainTest& data);

}  // namespace gradsync
