#include "trainers/loop/data_source.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "model/data_error.hpp"
#include "model/idx_reader.hpp"

namespace gradsync {

std::string default_data_dir(DatasetId dataset) {
  if (dataset == DatasetId::fashion) return "/usr/share/datasets/fashion-mnist";
  return std::string(GRADSYNC_SOURCE_DIR) + "/data/mnist";
}

std::string data_dir(const TrainConfig& config) {
  return config.data_dir.empty() ? default_data_dir(config.dataset) : config.data_dir;
}

TrainTest load_training_data(const TrainConfig& config) {
  const std::string dir = data_dir(config);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw DataError(fmt::format("{}: not a directory; --data names the directory that holds the four IDX files", dir));
  if (!std::filesystem::is_directory(dir, ec)) {
    const std::string fix = config.dataset == DatasetId::fashion
                                ? "install Debian's dataset-fashion-mnist (scripts/setup.sh --fashion) or pass --data DIR"
                                : "run scripts/fetch_mnist.sh, or pass --data DIR with the four MNIST IDX files";
    throw DataError(fmt::format("{}: no such directory; {}", dir, fix));
  }
  return load_idx_dataset(dir);
}

std::optional<TrainTest> load_training_data_alone(const TrainConfig& config, std::string_view program) {
  try {
    return load_training_data(config);
  } catch (const DataError& e) {
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    return std::nullopt;
  }
}

std::optional<TrainTest> load_training_data_on_every_rank(const TrainConfig& config, const Comm& world,
                                                          std::string_view program) {
  std::optional<TrainTest> data;
  std::string error;
  try {
    data = load_training_data(config);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (world.all_ok(error.empty())) return data;
  if (!error.empty()) fmt::print(stderr, "{}: error (rank {}): {}\n", program, world.rank(), error);
  return std::nullopt;
}

}  // namespace gradsync
