#include "trainers/checkpoint/checkpoint_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "trainers/checkpoint/checkpointing.hpp"

namespace gradsync {
namespace fs = std::filesystem;
namespace {

std::vector<std::uint8_t> slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError(fmt::format("{}: cannot open to fsync: {}", dir.string(), std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) throw CheckpointError(fmt::format("{}: fsync failed: {}", dir.string(), std::strerror(e)));
}

std::uint32_t stored_file_crc(std::span<const std::uint8_t> bytes) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes[bytes.size() - 4 + static_cast<std::size_t>(i)]} << (8 * i);
  return v;
}

Checkpoint read_piece(const fs::path& path, const Manifest& m, std::size_t k) {
  const std::vector<std::uint8_t> bytes = slurp(path);
  Checkpoint c = parse_checkpoint(bytes, path.string());  // its own header and file CRCs
  const ManifestPiece& p = m.pieces[k];
  const auto refuse = [&](const std::string& what) {
    return CheckpointError(fmt::format("{}: {}", path.string(), what));
  };
  if (stored_file_crc(bytes) != p.crc || bytes.size() != p.bytes)
    throw refuse(fmt::format("not the piece its manifest names (crc {:08x}, {} bytes; manifest: {:08x}, {} bytes)",
                             stored_file_crc(bytes), bytes.size(), p.crc, p.bytes));
  if (c.config != m.run) throw refuse("written by a different run than its manifest");
  if (c.step != m.step) throw refuse(fmt::format("piece of step {}, manifest of step {}", c.step, m.step));
  if (c.params.size() != p.end - p.begin || c.optimizer_state.size() != piece_optimizer_count(m, p))
    throw refuse("piece sizes differ from its manifest's key range");
  return c;
}

}  // namespace gradsync
