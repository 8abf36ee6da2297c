#include <fmt/format.h>

#include <algorithm>

#include "compression/compressor.hpp"

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
