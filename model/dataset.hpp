#pragma once
// Labelled image data in the layout the model consumes: one row of normalized float32 pixels per example.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradsync {

struct Dataset {
  std::vector<float> images;         // rows x features, row-major, values in [0, 1]
  std::vector<std::uint8_t> labels;  // rows entries, each < classes
  std::size_t rows = 0;
  std::size_t features = 0;
  int classes = 10;

  const float* row(std::size_t i) const { return images.data() + i * features; }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Loads the four standard IDX files from `dir`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each raw or
// with a `.gz` suffix. Validates every file (see read_idx), that image and label counts agree, that train and
// test images have the same shape, and that every label is < 10. Throws DataError naming the file.
TrainTest load_idx_dataset(const std::string& dir);

// Builds a Dataset from already-parsed IDX arrays; `source` names them in errors.
Dataset make_dataset(const std::vector<std::uint32_t>& image_dims, const std::vector<std::uint8_t>& pixels,
                     const std::vector<std::uint32_t>& label_dims, const std::vector<std::uint8_t>& labels,
                     const std::string& source);

}  // namespace gradsync
