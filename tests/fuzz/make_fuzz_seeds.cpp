// Writes the seed corpora for the fuzz targets: small valid files of each format (and gzip copies of the IDX
// ones), so the fuzzer starts from inputs that reach the end of each parser instead of rediscovering the
// formats byte by byte. Checkpoints come from serialize_checkpoint, so the seeds follow the writer exactly.
//   make_fuzz_seeds IDX_DIR CHECKPOINT_DIR
#include <fmt/format.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.hpp"

namespace {

void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0)
    throw std::runtime_error(fmt::format("{}: cannot write seed", path));
}

void write_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (!f || gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size()) ||
      gzclose(f) != Z_OK)
    throw std::runtime_error(fmt::format("{}: cannot write gzip seed", path));
}

// An unsigned-byte IDX file with the given dimensions and a simple byte pattern as data.
std::vector<std::uint8_t> idx_file(const std::vector<std::uint32_t>& dims) {
  std::vector<std::uint8_t> out = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  std::size_t elements = 1;
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(d >> shift));
    elements *= d;
  }
  for (std::size_t i = 0; i < elements; ++i) out.push_back(static_cast<std::uint8_t>(i * 37));
  return out;
}

void write_idx_seeds(const std::string& dir) {
  const std::vector<std::pair<std::string, std::vector<std::uint32_t>>> seeds = {
      {"labels-10", {10}}, {"images-2x4x5", {2, 4, 5}}, {"images-2x28x28", {2, 28, 28}}, {"matrix-3x7", {3, 7}}};
  for (const auto& [name, dims] : seeds) {
    const std::vector<std::uint8_t> bytes = idx_file(dims);
    write_file(fmt::format("{}/{}.idx", dir, name), bytes);
    write_gzip(fmt::format("{}/{}.idx.gz", dir, name), bytes);
  }
  // Near-valid headers at the two refusals that come before any data is read, so the fuzzer mutates around
  // them from the start: a header cut inside its dimensions, and dimensions whose product passes 4 GiB (one of
  // them wrapping a 64-bit product) with no data behind them.
  std::vector<std::uint8_t> short_header = idx_file({2, 4, 5});
  short_header.resize(9);
  write_file(fmt::format("{}/short-header.idx", dir), short_header);
  const std::vector<std::pair<std::string, std::vector<std::uint32_t>>> huge = {
      {"overflow-65536x65536x2", {65536, 65536, 2}}, {"overflow-wrap", {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}}};
  for (const auto& [name, dims] : huge) {
    std::vector<std::uint8_t> header = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
    for (std::uint32_t d : dims)
      for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<std::uint8_t>(d >> shift));
    write_file(fmt::format("{}/{}.idx", dir, name), header);
  }
}

void write_checkpoint_seeds(const std::string& dir) {
  using gradsync::Checkpoint;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Checkpoint empty;
  Checkpoint plain{"softmax 784-10 sync=ring batch=32 lr=0.1 seed=1", {0.5f, -0.25f, 1e-8f, 3.0f}, {}, 100, 1, {42}};
  Checkpoint full{"mlp 784-16-10 sync=ps-sharded servers=2 momentum=0.9",
                  {0.0f, -0.0f, inf, -inf, nan, 1.0f, -1.0f, 1e30f},
                  {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f},
                  123456789,
                  7,
                  {1, 2, 0xffffffffffffffffULL, 0x8000000000000000ULL}};
  for (const auto& [name, c] : {std::pair{"empty", empty}, std::pair{"plain", plain}, std::pair{"full", full}})
    write_file(fmt::format("{}/{}.ckpt", dir, name), gradsync::serialize_checkpoint(c, name));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_fuzz_seeds IDX_DIR CHECKPOINT_DIR\n");
    return 2;
  }
  try {
    write_idx_seeds(argv[1]);
    write_checkpoint_seeds(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
