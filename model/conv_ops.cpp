#include "model/conv_ops.hpp"

#include <algorithm>

#include "cpu/isa_dispatch.hpp"

namespace gradsync {
namespace {

// One kernel offset (dy, dx) on an image plane: output pixel (y, x) reads input pixel (y + dy, x + dx), which exists
// for y in [y_lo, y_hi) and x in [x_lo, x_hi). Row-major, output pixels t in [begin, end) read input pixel
// t - begin + source, a contiguous run, except the border columns of each row (x < x_lo or x >= x_hi), where the
// run wraps to a neighbouring row's pixels and the columns must hold 0 instead.
struct Window {
  std::size_t y_lo, y_hi, x_lo, x_hi, begin, end, source;
  bool empty() const { return y_lo >= y_hi || x_lo >= x_hi; }
};

Window window(std::size_t side, std::size_t ky, std::size_t kx, std::size_t pad) {
  const auto s = static_cast<std::ptrdiff_t>(side);
  const std::ptrdiff_t dy = static_cast<std::ptrdiff_t>(ky) - static_cast<std::ptrdiff_t>(pad);
  const std::ptrdiff_t dx = static_cast<std::ptrdiff_t>(kx) - static_cast<std::ptrdiff_t>(pad);
  const auto lo = [](std::ptrdiff_t d) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, -d)); };
  const auto hi = [s](std::ptrdiff_t d) { return static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(s - d, 0, s)); };
  Window w{lo(dy), hi(dy), lo(dx), hi(dx), 0, 0, 0};
  if (w.empty()) return w;
  w.begin = w.y_lo * side + w.x_lo;
  w.end = (w.y_hi - 1) * side + w.x_hi;
  w.source =
      static_cast<std::size_t>((static_cast<std::ptrdiff_t>(w.y_lo) + dy) * s + static_cast<std::ptrdiff_t>(w.x_lo) + dx);
  return w;
}

// Zeroes the border columns of rows [y_lo, y_hi) of a plane: at most kernel / 2 floats at either end of a row.
__attribute__((always_inline)) inline void zero_borders(float* plane, const Window& w, std::size_t side) {
  for (std::size_t y = w.y_lo; y < w.y_hi; ++y) {
    for (std::size_t x = 0; x < w.x_lo; ++x) plane[y * side + x] = 0.0f;
    for (std::size_t x = w.x_hi; x < side; ++x) plane[y * side + x] = 0.0f;
  }
}

}  // namespace

// One plane of columns per (channel, ky, kx) and image: a zero margin, one contiguous copy of the shifted image
// and a zero margin, loops the compiler vectorizes, then the few border columns zeroed. Row by row (three loops
// per row of 14 floats) took 1.7x as long, the loops' overhead exceeding the copies (thread CPU time).
void im2col(const float* in, ActivationLayout layout, ConvInput shape, std::size_t first, std::size_t images,
            float* cols) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const std::size_t side = shape.side, pixels = shape.pixels(), k = shape.kernel, pad = k / 2;
    const std::size_t width = images * pixels;
    for (std::size_t c = 0; c < shape.channels; ++c)
      for (std::size_t ky = 0; ky < k; ++ky)
        for (std::size_t kx = 0; kx < k; ++kx) {
          const Window w = window(side, ky, kx, pad);
          float* row = cols + ((c * k + ky) * k + kx) * width;
          for (std::size_t j = 0; j < images; ++j) {
            float* __restrict out = row + j * pixels;
            const float* __restrict src = in + layout.at(c, first + j, 0) + w.source;
            for (std::size_t t = 0; t < w.begin; ++t) out[t] = 0.0f;
            for (std::size_t t = w.begin; t < w.end; ++t) out[t] = src[t - w.begin];
            for (std::size_t t = w.end; t < pixels; ++t) out[t] = 0.0f;
            zero_borders(out, w, side);
          }
        }
  });
}

// Zeroes the group's images, then adds each plane of columns into them in im2col's order (the same bits on every
// call), one contiguous run per plane: the border columns, which im2col fills with 0, are zeroed in `cols` first,
// so that adding them leaves the neighbouring pixels they overlap unchanged.
void col2im(float* cols, ConvInput shape, std::size_t first, std::size_t images, float* out, ActivationLayout layout) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const std::size_t side = shape.side, pixels = shape.pixels(), k = shape.kernel, pad = k / 2;
    const std::size_t width = images * pixels;
    for (std::size_t c = 0; c < shape.channels; ++c)
      for (std::size_t j = 0; j < images; ++j) {
        float* image = out + layout.at(c, first + j, 0);
        for (std::size_t p = 0; p < pixels; ++p) image[p] = 0.0f;
      }
    for (std::size_t c = 0; c < shape.channels; ++c)
      for (std::size_t ky = 0; ky < k; ++ky)
        for (std::size_t kx = 0; kx < k; ++kx) {
          const Window w = window(side, ky, kx, pad);
          if (w.empty()) continue;
          float* row = cols + ((c * k + ky) * k + kx) * width;
          for (std::size_t j = 0; j < images; ++j) {
            float* __restrict src = row + j * pixels;
            zero_borders(src, w, side);
            float* __restrict o = out + layout.at(c, first + j, 0) + w.source;
            for (std::size_t t = w.begin; t < w.end; ++t) o[t - w.begin] += src[t];
          }
        }
  });
}

void max_pool_bias_relu(const float* z, std::size_t channels, std::size_t side, std::size_t images, const float* bias,
                        std::size_t first, float* out, std::uint8_t* where, ActivationLayout out_layout) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const std::size_t half = side / 2, pixels = side * side;
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t j = 0; j < images; ++j) {
        const float* image = z + (c * images + j) * pixels;
        for (std::size_t py = 0; py < half; ++py) {
          const float* top = image + 2 * py * side;
          const float* bottom = top + side;
          for (std::size_t px = 0; px < half; ++px) {
            const float v[4] = {top[2 * px], top[2 * px + 1], bottom[2 * px], bottom[2 * px + 1]};
            std::uint8_t at = 0;
            for (std::uint8_t i = 1; i < 4; ++i) at = v[i] > v[at] ? i : at;
            const float m = v[at] + bias[c];
            const std::size_t o = out_layout.at(c, first + j, py * half + px);
            out[o] = m > 0.0f ? m : 0.0f;
            where[o] = at;
          }
        }
      }
  });
}

void max_unpool(const float* d_out, const std::uint8_t* where, ActivationLayout out_layout, std::size_t channels,
                std::size_t side, std::size_t images, std::size_t first, float* dz) {
  on_active_isa([=]() GRADSYNC_INLINE_LOOP {
    const std::size_t half = side / 2, pixels = side * side;
    for (std::size_t i = 0; i < channels * images * pixels; ++i) dz[i] = 0.0f;
    for (std::size_t c = 0; c < channels; ++c)
      for (std::size_t j = 0; j < images; ++j) {
        float* image = dz + (c * images + j) * pixels;
        for (std::size_t py = 0; py < half; ++py)
          for (std::size_t px = 0; px < half; ++px) {
            const std::size_t o = out_layout.at(c, first + j, py * half + px);
            const std::uint8_t at = where[o];
            image[(2 * py + at / 2) * side + 2 * px + at % 2] = d_out[o];
          }
      }
  });
}

}  // namespace gradsync
