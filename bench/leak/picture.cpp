#include "bench/leak/picture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace gradsync::bench {

PictureGrid::PictureGrid(std::size_t rows, std::size_t cols, std::size_t width, std::size_t height, std::size_t zoom)
    : rows_(rows), cols_(cols), width_(width), height_(height), zoom_(zoom) {
  if (rows == 0 || cols == 0 || width == 0 || height == 0 || zoom == 0)
    throw std::invalid_argument(
        fmt::format("PictureGrid: {} x {} cells of {} x {} at zoom {}", rows, cols, width, height, zoom));
  pixel_width_ = cols * (width * zoom + gap_) + gap_;
  pixel_height_ = rows * (height * zoom + gap_) + gap_;
  pixels_.assign(pixel_width_ * pixel_height_, 128);
}

void PictureGrid::draw(std::size_t row, std::size_t col, std::span<const float> values, double peak) {
  if (row >= rows_ || col >= cols_ || values.size() != width_ * height_ || !(peak > 0))
    throw std::invalid_argument(fmt::format("PictureGrid::draw: cell ({}, {}) of {} x {}, {} values for {} x {}", row,
                                            col, rows_, cols_, values.size(), width_, height_));
  const std::size_t top = gap_ + row * (height_ * zoom_ + gap_), left = gap_ + col * (width_ * zoom_ + gap_);
  for (std::size_t y = 0; y < height_; ++y)
    for (std::size_t x = 0; x < width_; ++x) {
      const float v = values[y * width_ + x];
      const double level = std::isnan(v) ? 0.0 : std::clamp(v / peak, 0.0, 1.0);
      const auto byte = static_cast<unsigned char>(std::lround(255 * level));
      for (std::size_t dy = 0; dy < zoom_; ++dy)
        std::fill_n(
            pixels_.begin() + static_cast<std::ptrdiff_t>((top + y * zoom_ + dy) * pixel_width_ + left + x * zoom_),
            zoom_, byte);
    }
}

void PictureGrid::write_pgm(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << "P5\n" << pixel_width_ << ' ' << pixel_height_ << "\n255\n";
  out.write(reinterpret_cast<const char*>(pixels_.data()), static_cast<std::streamsize>(pixels_.size()));
  if (!out) throw std::runtime_error(fmt::format("cannot write the picture {}", path));
}

}  // namespace gradsync::bench
