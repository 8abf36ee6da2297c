#pragma once
// leak_images' flags (bench/leak/leak_images.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::bench {

struct LeakImagesFlags {
  std::string model = "mlp", data = "data/mnist", wire = "plain", csv, picture, strip, originals;
  std::vector<std::size_t> hidden = {128};
  std::size_t batch = 1, steps = 0, picture_max = 16, local_batch = 10;
  std::uint64_t seed = 1;
  float lr = 0.1f, dp_clip = 1.0f;
  int dp_workers = 1;
  double sa_range = 1.0, threshold = 1e-6, psnr = 20;
};

// Parses leak_images' command line into `f`; every rank calls it, rank `lead` prints. Returns std::nullopt to go on,
// or the exit code to leave with (bench/flags/command_line.hpp).
std::optional<int> parse_leak_images_flags(int argc, char** argv, LeakImagesFlags& f, bool lead);

}  // namespace gradsync::bench
