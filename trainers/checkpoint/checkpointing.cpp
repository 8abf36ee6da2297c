#include "trainers/checkpoint/checkpointing.hpp"
#include "cpu/isa_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>

#include "cpu/isa_dispatch.hpp"
#include "trainers/checkpoint/host_map.hpp"

namespace gradsync {

std::string run_fingerprint(const TrainConfig& c, const std::string& model) {
  TrainConfig method = c;
  method.servers = 1;  // the shard count may change on resume: sync_name() without its -kK
  return fmt::format("model={} sync={} dataset={} seed={} momentum={} chunk={}", model, method.sync_name(),
                     dataset_name(c.dataset), c.seed, c.sgd.momentum, c.chunk_bytes);
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
  const std::uint64_t blocks = m.param_count ? m.optimizer_count / m.param_count : 0;
  return blocks * (p.end - p.begin);
}

void copy_piece_state(std::span<const float> state, std::size_t n, ElementRange range, std::span<float> piece) {
  for (std::size_t block = 0, at = 0; at < piece.size(); block += n, at += range.size())
    std::copy_n(state.begin() + static_cast<std::ptrdiff_t>(block + range.begin), range.size(),
                piece.begin() + static_cast<std::ptrdiff_t>(at));
}

void place_piece_state(std::span<const float> piece, std::size_t n, ElementRange range, std::span<float> state) {
  for (std::size_t block = 0, at = 0; at < piece.size(); block += n, at += range.size())
    std::copy_n(piece.begin() + static_cast<std::ptrdiff_t>(at), range.size(),
                state.begin() + static_cast<std::ptrdiff_t>(block + range.begin));
}

std::uint32_t optimizer_state_crc(const Manifest& m, std::span<const float> state) {
  if (m.servers == 0 || state.empty() || m.param_count == 0) return crc32_floats(state);
  std::uint32_t crc = 0;
  bool first = true;
  for (const ManifestPiece& p : m.pieces)
    for (std::size_t block = 0; block < state.size(); block += m.param_count) {
      const std::span<const float> segment = state.subspan(block + p.begin, p.end - p.begin);
      const std::uint32_t c = crc32_floats(segment);
      crc = first ? c : crc32_concat(crc, c, segment.size_bytes());
      first = false;
    }
  return crc;
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
