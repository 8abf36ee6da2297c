#include <fmt/format.h>

#include "trainers/compression/compressor.hpp"

namespace gradsync {

std::vector<Tensor> model_tensors(const std::vector<std::size_t>& sizes) {
  std::vector<Tensor> tensors;
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    const std::size_t out = sizes[l + 1], in = sizes[l];
    tensors.push_back({offset, out, in, fmt::format("layer {} weights ({} x {})", l + 1, out, in)});
    offset += out * in;
    tensors.push_back({offset, out, 1, fmt::format("layer {} bias ({})", l + 1, out)});
    offset += out;
  }
  return tensors;
}

}  // namespace gradsync
