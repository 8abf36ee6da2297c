#include "trainers/checkpointing.hpp"
#include "cpu/isa_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>

#include "cpu/isa_dispatch.hpp"
#include "trainers/host_map.hpp"

namespace gradsync {

std::string run_fingerprint(const TrainConfig& c, const std::vector<std::size_t>& sizes) {
  TrainConfig method = c;
  method.servers = 1;  // the shard count may change on resume: sync_name() without its -kK
  return fmt::format("model={} sync={} dataset={} seed={} momentum={} chunk={}", fmt::join(sizes, "-"),
                     method.sync_name(), c.dataset, c.seed, c.sgd.momentum, c.chunk_bytes);
}

std::string local_checkpoint_dir(const TrainConfig& config) {
  std::string dir = config.checkpoint_dir;
  const std::string host = this_host_name();
  for (std::size_t at = dir.find("%h"); at != std::string::npos; at = dir.find("%h", at + host.size()))
    dir.replace(at, 2, host);
  return dir;
}

std::string set_dir_name(std::int64_t step) { return fmt::format("step-{:012}", step); }
std::string piece_file_name(std::size_t piece, std::size_t pieces) {
  return fmt::format("piece-{}-of-{}.ckpt", piece, pieces);
}
std::string manifest_file_name(int rank) { return fmt::format("manifest-r{}", rank); }

std::int64_t step_of_set_dir(const std::string& name) {
  long long step = -1;
  int used = 0;
  if (name.size() != 17 || std::sscanf(name.c_str(), "step-%12lld%n", &step, &used) != 1 || used != 17) return -1;
  return step;
}

std::size_t piece_optimizer_count(const Manifest& m, const ManifestPiece& p) {
  if (m.servers == 0) return m.optimizer_count;
  return m.optimizer_count ? p.end - p.begin : 0;
}

// A float is NaN or Inf exactly when its exponent bits are all ones. An integer max over the masked bits
// vectorizes (a float sum, acc += v - v, would be one serial dependency chain), but only from SSE4.1 on, which
// has an unsigned 32-bit max: the loop runs compiled for the process's instruction set (cpu/isa_dispatch.hpp).
bool all_finite(std::span<const float> values) {
  return on_active_isa([values]() GRADSYNC_INLINE_LOOP {
    constexpr std::uint32_t kExponent = 0x7f800000u;
    std::uint32_t top = 0;
    for (float v : values) {
      const std::uint32_t exponent = std::bit_cast<std::uint32_t>(v) & kExponent;
      top = exponent > top ? exponent : top;
    }
    return top != kExponent;
  });
}

}  // namespace gradsync
