#include "model/conv_ops.hpp"

#include <algorithm>

#include "cpu/isa_dispatch.hpp"

namespace gradsync {
namespace {

// The columns of one kernel offset (dy, dx) that fall inside the image: output pixel (y, x) reads input pixel
// (y + dy, x + dx), which exists for y in [y_lo, y_hi) and x in [x_lo, x_hi).
struct Window {
  std::ptrdiff_t dy, dx;
  std::size_t y_lo, y_hi, x_lo, x_hi;
  // Where in the input image the inside part of output row y (y_lo <= y < y_hi) starts: pixel (y + dy, x_lo + dx).
  std::size_t source(std::size_t y, std::size_t side) const {
    return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(y) + dy) * side +
           static_cast<std::size_t>(static_cast<std::ptrdiff_t>(x_lo) + dx);
  }
};

Window window(std::size_t side, std::size_t ky, std::size_t kx, std::size_t pad) {
  const auto s = static_cast<std::ptrdiff_t>(side);
  const std::ptrdiff_t dy = static_cast<std::ptrdiff_t>(ky) - static_cast<std::ptrdiff_t>(pad);
  const std::ptrdiff_t dx = static_cast<std::ptrdiff_t>(kx) - static_cast<std::ptrdiff_t>(pad);
  const auto lo = [](std::ptrdiff_t d) { return static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, -d)); };
  const auto hi = [s](std::ptrdiff_t d) { return static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(s - d, 0, s)); };
  return {dy, dx, lo(dy), hi(dy), lo(dx), hi(dx)};
}

}  // namespace

// One row of columns per (channel, ky, kx), one image at a time, one pixel row at a time: each row is a zero
// margin, a contiguous copy and a zero margin, loops the compiler vectorizes (a call per row would cost more than
// the copy of 14 or 28 floats).
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
            const float* image = in + layout.at(c, first + j, 0);
            float* out = row + j * pixels;
            for (std::size_t y = 0; y < side; ++y) {
              float* __restrict o = out + y * side;
              if (y < w.y_lo || y >= w.y_hi) {
                for (std::size_t x = 0; x < side; ++x) o[x] = 0.0f;
                continue;
              }
              const float* __restrict src = image + w.source(y, side);
              for (std::size_t x = 0; x < w.x_lo; ++x) o[x] = 0.0f;
              for (std::size_t x = 0; x < w.x_hi - w.x_lo; ++x) o[w.x_lo + x] = src[x];
              for (std::size_t x = w.x_hi; x < side; ++x) o[x] = 0.0f;
            }
          }
        }
  });
}

// Zeroes the group's images, then adds each column row into them in im2col's order: every input pixel receives
// its kernel offsets' contributions in the same order on every call (the same bits on every rank).
void col2im(const float* cols, ConvInput shape, std::size_t first, std::size_t images, float* out,
            ActivationLayout layout) {
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
          const float* row = cols + ((c * k + ky) * k + kx) * width;
          for (std::size_t j = 0; j < images; ++j) {
            float* image = out + layout.at(c, first + j, 0);
            const float* src = row + j * pixels;
            for (std::size_t y = w.y_lo; y < w.y_hi; ++y) {
              float* __restrict o = image + w.source(y, side);
              const float* __restrict s = src + y * side + w.x_lo;
              for (std::size_t x = 0; x < w.x_hi - w.x_lo; ++x) o[x] += s[x];
            }
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
