#pragma once
// Helpers shared by the test files.
#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include "model/dataset.hpp"
#include "model/kernels/blis_setup.hpp"
#include "model/kernels/installed_plan.hpp"
#include "model/synthetic.hpp"

namespace gradsync::test {

// Where the real MNIST files are: $GRADSYNC_MNIST_DIR, else data/mnist in the source tree.
inline std::string mnist_dir() {
  if (const char* dir = std::getenv("GRADSYNC_MNIST_DIR"); dir && *dir) return dir;
  return std::string(GRADSYNC_SOURCE_DIR) + "/data/mnist";
}

// ||a - b|| / ||b||
inline double relative_difference(std::span<const float> a, std::span<const float> b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  if (a.size() != b.size()) return INFINITY;
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Four separable Gaussian blobs of 20 features: `train_rows` to train on, a quarter as many to test on (seed 17).
inline TrainTest blobs(std::size_t train_rows = 1024) {
  return {make_blobs(train_rows, 20, 4, 0.3f, 17, 0), make_blobs(train_rows / 4, 20, 4, 0.3f, 17, 1)};
}

// Puts back the kernel plan tests/main.cpp adopted when a test case ends, whatever the case installed.
struct RestorePlan {
  KernelPlan saved = installed_kernel_plan();
  ~RestorePlan() { install_kernel_plan(saved, configured_blis()); }
};

// A fresh, empty temporary directory unique to this rank and test.
inline std::filesystem::path temp_dir(const std::string& name, int rank) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gradsync-test-" + name + "-" + std::to_string(rank) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace gradsync::test
