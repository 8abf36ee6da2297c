#pragma once
// The models `train --model` builds, listed once: the command line's help and checks, make_model
// (trainers/config/train_config.hpp), bench_compute's and bench_sync's flags read this list (docs/reference.md and
// docs/training.md describe the same names).
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "model/model.hpp"

namespace gradsync {

struct ModelInfo {
  std::string_view name;     // --model's value
  std::string_view summary;  // one line for --help
  bool hidden = false;       // its hidden layers are --hidden's widths (else --hidden does not apply)
  // Empty, or why data of `features` features per example cannot feed it (a one-line reason, without the flag).
  std::string (*check)(std::size_t features) = nullptr;
  // The model for data of `features` features (check() passed) and `classes` classes; `hidden` are --hidden's
  // widths where it takes them (non-empty, all positive).
  std::unique_ptr<Model> (*make)(std::span<const std::size_t> hidden, std::size_t features,
                                 std::size_t classes) = nullptr;
};

// Every model, in the order --help lists them.
std::span<const ModelInfo> model_table();
// The model called `name`, or null.
const ModelInfo* find_model(std::string_view name);
// find_model for names a program spells itself (tests, defaults): throws std::invalid_argument naming the models.
const ModelInfo& model_info(std::string_view name);
// The models' names joined by `separator`.
std::string model_names(std::string_view separator = ", ");

}  // namespace gradsync
