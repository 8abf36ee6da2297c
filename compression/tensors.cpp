#include <fmt/format.h>

#include <algorithm>

#include "compression/compressor.hpp"

namespace gradsync {

std::vector<Tensor> model_tensors(std::span<const LayerShape> layers) {
  std::vector<Tensor> tensors;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerShape& layer = layers[l];
    tensors.push_back({layer.offset, layer.outputs, layer.inputs,
                       fmt::format("layer {} weights ({} x {})", l + 1, layer.outputs, layer.inputs)});
    tensors.push_back({layer.bias_offset(), layer.outputs, 1, fmt::format("layer {} bias ({})", l + 1, layer.outputs)});
  }
  return tensors;
}

std::vector<Tensor> tensors_cut(std::span<const Tensor> tensors, ElementRange range) {
  std::vector<Tensor> cut;
  for (const Tensor& t : tensors) {
    const std::size_t begin = std::max(t.offset, range.begin), end = std::min(t.offset + t.size(), range.end);
    if (begin >= end) continue;
    if (begin == t.offset && end == t.offset + t.size()) {
      cut.push_back({t.offset - range.begin, t.rows, t.cols, t.name});
      continue;
    }
    cut.push_back({begin - range.begin, 1, end - begin,
                   fmt::format("{}, entries {} to {}", t.name, begin - t.offset, end - t.offset)});
  }
  return cut;
}

}  // namespace gradsync
