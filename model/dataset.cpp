#include "model/dataset.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "model/idx_reader.hpp"

namespace gradsync {
namespace {

constexpr int kClasses = 10;
constexpr float kPixelScale = 1.0f / 255.0f;

std::string find_file(const std::string& dir, const std::string& base) {
  namespace fs = std::filesystem;
  for (const char* suffix : {"", ".gz"}) {
    const fs::path p = fs::path(dir) / (base + suffix);
    if (fs::exists(p)) return p.string();
  }
  throw DataError(fmt::format("{}: missing {} (or {}.gz); pass --data DIR with the four MNIST IDX files", dir, base, base));
}

Dataset load_split(const std::string& dir, const std::string& prefix) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(images_path, 3);
  const IdxArray labels = read_idx(labels_path, 1);
  return make_dataset(images.dims, images.data, labels.dims, labels.data, images_path + " / " + labels_path);
}

}  // namespace

Dataset make_dataset(const std::vector<std::uint32_t>& image_dims, const std::vector<std::uint8_t>& pixels,
                     const std::vector<std::uint32_t>& label_dims, const std::vector<std::uint8_t>& labels,
                     const std::string& source) {
  if (image_dims.size() != 3 || label_dims.size() != 1)
    throw DataError(fmt::format("{}: images need 3 dimensions and labels 1", source));
  if (image_dims[0] != label_dims[0])
    throw DataError(fmt::format("{}: {} images but {} labels", source, image_dims[0], label_dims[0]));
  Dataset d;
  d.rows = image_dims[0];
  d.features = std::size_t{image_dims[1]} * image_dims[2];
  d.classes = kClasses;
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= kClasses)
      throw DataError(fmt::format("{}: label {} at index {} is out of range 0..{}", source, labels[i], i, kClasses - 1));
  d.labels = labels;
  d.images.resize(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) d.images[i] = static_cast<float>(pixels[i]) * kPixelScale;
  return d;
}

TrainTest load_idx_dataset(const std::string& dir) {
  TrainTest tt{load_split(dir, "train"), load_split(dir, "t10k")};
  if (tt.train.features != tt.test.features)
    throw DataError(fmt::format("{}: train images have {} pixels but test images {}", dir, tt.train.features,
                                tt.test.features));
  return tt;
}

}  // namespace gradsync
