#include "model/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace gradsync {

Workspace::Workspace(const Model& model, std::size_t max_batch)
    : max_batch_(max_batch), scratch_(model.make_scratch(max_batch)) {}

std::vector<GemmShape> Model::planned_gemms(std::size_t batch) const {
  std::vector<GemmShape> gemms;
  const auto add = [&gemms](const std::vector<GemmShape>& list) {
    for (const GemmShape& g : list)
      if (std::find(gemms.begin(), gemms.end(), g) == gemms.end()) gemms.push_back(g);
  };
  add(training_gemms(batch));
  add(evaluation_gemms());
  return gemms;
}

float Model::clipped_loss_and_gradient(std::span<const float>, const Batch&, std::span<float>, Workspace&, float,
                                       std::span<float>, PassObserver*) const {
  throw std::invalid_argument(fmt::format(
      "per-example clipping (DP-SGD) is built for dense layers, whose per-example gradient is an outer product that "
      "never has to be formed; the {} model has other layers (convolutions), whose per-example gradients would have "
      "to be materialized, which gradsync does not do: use a dense model (softmax, mlp, 2nn) for DP",
      describe()));
}

void Model::set_layers(std::vector<LayerShape> layers) {
  std::size_t at = 0;
  for (const LayerShape& l : layers) {
    if (l.offset != at || l.outputs == 0 || l.inputs == 0)
      throw std::invalid_argument(fmt::format("Model: layer at {} ({} x {}) does not follow the one ending at {}",
                                              l.offset, l.outputs, l.inputs, at));
    at = l.end();
  }
  layers_ = std::move(layers);
}

void Model::check_pass(const char* who, std::span<const float> params, const Batch& batch, std::span<const float> grads,
                       const Workspace& ws) const {
  if (batch.size == 0 || batch.size > ws.max_batch())
    throw std::invalid_argument(
        fmt::format("{}: batch of {} rows, the workspace holds 1..{}", who, batch.size, ws.max_batch()));
  if (params.size() != parameter_count() || grads.size() != parameter_count() || batch.features != input_features())
    throw std::invalid_argument(fmt::format("{}: {} params, {} grads and {} features for a {} model ({} parameters)", who,
                                            params.size(), grads.size(), batch.features, describe(), parameter_count()));
}

float Model::input_gradient(std::span<const float>, const Batch&, std::span<float>, Workspace&,
                            std::span<std::uint8_t>) const {
  throw std::invalid_argument(
      fmt::format("the {} model has no gradient with respect to its inputs (only the MLP and "
                  "softmax regression have one so far)",
                  describe()));
}

void Model::check_evaluation(const char* who, std::span<const float> params, const Dataset& data) const {
  if (params.size() != parameter_count() || data.features != input_features())
    throw std::invalid_argument(fmt::format("{}: {} params and {} features for a {} model ({} parameters)", who,
                                            params.size(), data.features, describe(), parameter_count()));
}

}  // namespace gradsync
