#pragma once
// Where one layer's parameters lie in a model's flat buffer (model/model.hpp), for those that cut the buffer by
// layers without knowing the model: compression (a tensor per weight matrix) and buckets (cut between rows).
#include <cstddef>

namespace gradsync {

// An outputs x inputs weight matrix from `offset` (row-major, one row per output unit, or per output channel of a
// convolution, whose inputs are its input channels times the kernel's pixels), then `outputs` biases.
struct LayerShape {
  std::size_t offset = 0, outputs = 0, inputs = 0;
  std::size_t bias_offset() const { return offset + outputs * inputs; }
  std::size_t end() const { return bias_offset() + outputs; }
  bool operator==(const LayerShape&) const = default;
};

}  // namespace gradsync
