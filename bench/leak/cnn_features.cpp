#include "bench/leak/cnn_features.hpp"

#include <algorithm>
#include <limits>

namespace gradsync::bench {
namespace {

constexpr std::size_t kKernel = 5, kPad = 2;

// One 'same' convolution of `in` (cin x side x side) by `layer`'s weights and biases, pooled 2x2, ReLU:
// cout x (side/2) x (side/2).
std::vector<double> conv_pool(std::span<const float> params, const LayerShape& layer, const std::vector<double>& in,
                              std::size_t cin, std::size_t side) {
  const std::size_t cout = layer.outputs, half = side / 2;
  const float* w = params.data() + layer.offset;
  const float* b = params.data() + layer.bias_offset();
  std::vector<double> z(side * side), out(cout * half * half);
  for (std::size_t o = 0; o < cout; ++o) {
    std::fill(z.begin(), z.end(), 0.0);
    for (std::size_t c = 0; c < cin; ++c)
      for (std::size_t ky = 0; ky < kKernel; ++ky)
        for (std::size_t kx = 0; kx < kKernel; ++kx) {
          const double wk = w[o * layer.inputs + (c * kKernel + ky) * kKernel + kx];
          for (std::size_t y = 0; y < side; ++y) {
            const std::ptrdiff_t sy = static_cast<std::ptrdiff_t>(y + ky) - static_cast<std::ptrdiff_t>(kPad);
            if (sy < 0 || sy >= static_cast<std::ptrdiff_t>(side)) continue;
            const double* row = in.data() + (c * side + static_cast<std::size_t>(sy)) * side;
            for (std::size_t x = 0; x < side; ++x) {
              const std::ptrdiff_t sx = static_cast<std::ptrdiff_t>(x + kx) - static_cast<std::ptrdiff_t>(kPad);
              if (sx >= 0 && sx < static_cast<std::ptrdiff_t>(side)) z[y * side + x] += wk * row[sx];
            }
          }
        }
    for (std::size_t y = 0; y < half; ++y)
      for (std::size_t x = 0; x < half; ++x) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t dy = 0; dy < 2; ++dy)
          for (std::size_t dx = 0; dx < 2; ++dx) m = std::max(m, z[(2 * y + dy) * side + 2 * x + dx]);
        out[(o * half + y) * half + x] = std::max(0.0, m + b[o]);
      }
  }
  return out;
}

}  // namespace

std::vector<float> cnn_dense_inputs(const Cnn& cnn, std::span<const float> params, std::span<const float> pixels,
                                    std::size_t count) {
  const CnnShape& s = cnn.shape();
  const std::size_t pixels_per = s.side * s.side, features = s.channels2 * (s.side / 4) * (s.side / 4);
  std::vector<float> out(count * features);
  for (std::size_t n = 0; n < count; ++n) {
    std::vector<double> image(pixels.begin() + static_cast<std::ptrdiff_t>(n * pixels_per),
                              pixels.begin() + static_cast<std::ptrdiff_t>((n + 1) * pixels_per));
    const std::vector<double> a1 = conv_pool(params, cnn.layers()[0], image, 1, s.side);
    const std::vector<double> a2 = conv_pool(params, cnn.layers()[1], a1, s.channels1, s.side / 2);
    std::transform(a2.begin(), a2.end(), out.begin() + static_cast<std::ptrdiff_t>(n * features),
                   [](double v) { return static_cast<float>(v); });
  }
  return out;
}

}  // namespace gradsync::bench
