#include "model/models.hpp"

#include <fmt/format.h>

#include <vector>

#include "model/mlp.hpp"

namespace gradsync {
namespace {

std::unique_ptr<Model> mlp_of(std::span<const std::size_t> hidden, std::size_t features, std::size_t classes) {
  std::vector<std::size_t> sizes = {features};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(classes);
  return std::make_unique<Mlp>(std::move(sizes));
}

constexpr ModelInfo kModels[] = {
    {.name = "softmax",
     .summary = "softmax regression",
     .make = [](std::span<const std::size_t>, std::size_t features,
                std::size_t classes) { return mlp_of({}, features, classes); }},
    {.name = "mlp",
     .summary = "fully connected, ReLU hidden layers of --hidden's widths",
     .hidden = true,
     .make = mlp_of},
};

}  // namespace

std::span<const ModelInfo> model_table() { return kModels; }

const ModelInfo* find_model(std::string_view name) {
  for (const ModelInfo& m : kModels)
    if (m.name == name) return &m;
  return nullptr;
}

std::string model_names(std::string_view separator) {
  std::string names;
  for (const ModelInfo& m : kModels) names += fmt::format("{}{}", names.empty() ? "" : separator, m.name);
  return names;
}

}  // namespace gradsync
