#include "model/models.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/cnn.hpp"
#include "model/mlp.hpp"

namespace gradsync {
namespace {

std::unique_ptr<Model> mlp_of(std::span<const std::size_t> hidden, std::size_t features, std::size_t classes) {
  std::vector<std::size_t> sizes = {features};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(classes);
  return std::make_unique<Mlp>(std::move(sizes));
}

// The side of square images of `features` pixels, or 0 if they are not square.
std::size_t square_side(std::size_t features) {
  auto side = static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(features))));
  return side * side == features ? side : 0;
}

// McMahan et al.'s 2NN and CNN ("Communication-Efficient Learning of Deep Networks from Decentralized Data", 2017).
constexpr std::size_t kTwoNnWidths[] = {200, 200};

constexpr ModelInfo kModels[] = {
    {.name = "softmax",
     .summary = "softmax regression",
     .make = [](std::span<const std::size_t>, std::size_t features,
                std::size_t classes) { return mlp_of({}, features, classes); }},
    {.name = "mlp",
     .summary = "fully connected, ReLU hidden layers of --hidden's widths",
     .hidden = true,
     .make = mlp_of},
    {.name = "2nn",
     .summary = "the mlp with hidden layers 200,200 (199,210 parameters on MNIST)",
     .make = [](std::span<const std::size_t>, std::size_t features,
                std::size_t classes) { return mlp_of(kTwoNnWidths, features, classes); }},
    {.name = "cnn",
     .summary = "5x5 conv 32, 2x2 max pool, 5x5 conv 64, 2x2 max pool, dense 512, ReLU (1,663,370 parameters on "
                "MNIST)",
     .check = [](std::size_t features) -> std::string {
       const std::size_t side = square_side(features);
       if (side > 0 && side % 4 == 0) return {};
       return fmt::format("needs square images whose side is a multiple of 4, not {} pixels", features);
     },
     .make = [](std::span<const std::size_t>, std::size_t features, std::size_t classes) -> std::unique_ptr<Model> {
       return std::make_unique<Cnn>(CnnShape{.side = square_side(features), .classes = classes});
     }},
};

}  // namespace

std::span<const ModelInfo> model_table() { return kModels; }

const ModelInfo* find_model(std::string_view name) {
  for (const ModelInfo& m : kModels)
    if (m.name == name) return &m;
  return nullptr;
}

const ModelInfo& model_info(std::string_view name) {
  if (const ModelInfo* m = find_model(name)) return *m;
  throw std::invalid_argument(fmt::format("unknown model '{}' (choose {})", name, model_names(", ")));
}

std::string model_names(std::string_view separator) {
  std::string names;
  for (const ModelInfo& m : kModels) names += fmt::format("{}{}", names.empty() ? "" : separator, m.name);
  return names;
}

}  // namespace gradsync
