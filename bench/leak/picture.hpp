#pragma once
// A grid of small grayscale images written as binary PGM (P5), for the leak tool's originals-beside-reconstructions
// pictures: cells of width x height values in [0, peak] (clamped; NaN black), each pixel drawn zoom x zoom, cells
// parted by a mid-gray gap so that a black digit background stays distinct from the frame.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace gradsync::bench {

class PictureGrid {
 public:
  // rows x cols cells of width x height values (all >= 1), each drawn zoom x zoom; starts all frame gray.
  PictureGrid(std::size_t rows, std::size_t cols, std::size_t width, std::size_t height, std::size_t zoom = 3);
  // Draws `values` (width x height, row-major; std::invalid_argument otherwise) into cell (row, col), scaled by peak.
  void draw(std::size_t row, std::size_t col, std::span<const float> values, double peak = 1);
  // Writes the grid as binary PGM to `path`; std::runtime_error naming the path if it cannot.
  void write_pgm(const std::string& path) const;

 private:
  std::size_t rows_, cols_, width_, height_, zoom_, gap_ = 2, pixel_width_, pixel_height_;
  std::vector<unsigned char> pixels_;
};

}  // namespace gradsync::bench
