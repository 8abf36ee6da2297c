#pragma once
// The checks of --compress and --error-feedback, as hooks of the configuration's own (trainers/config/train_config.hpp).
#include <span>
#include <string>

#include "model/layer_shape.hpp"

namespace gradsync {

struct TrainConfig;

// What the command line alone decides: the compressor's parameter, and which --sync and overlap options carry it.
// Empty, or a one-line message naming the flag; the same on every rank. validate() (trainers/config/validate_config.hpp)
// calls it.
std::string validate_compression(const TrainConfig& config);

// What needs the model's shape (Model::layers(), known once the data is loaded): PowerSGD's rank against each weight
// matrix. Empty, or a one-line message naming the layer and its shape.
std::string validate_against_model(const TrainConfig& config, std::span<const LayerShape> layers);

}  // namespace gradsync
