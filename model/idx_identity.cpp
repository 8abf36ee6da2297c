#include "model/idx_identity.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace gradsync {
namespace {

std::uint32_t little_endian_u32(const unsigned char* bytes) {
  return std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 | std::uint32_t{bytes[2]} << 16 |
         std::uint32_t{bytes[3]} << 24;
}

std::string unreadable(const std::string& why) { return fmt::format("unreadable ({})", why); }

// The identity of the file at `path` (idx_files_identity's contract).
std::string identity_of(const std::filesystem::path& path, bool with_checksum) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return unreadable(ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable("cannot open it");
  std::array<unsigned char, 2> magic{};
  in.read(reinterpret_cast<char*>(magic.data()), magic.size());
  const bool gzip = in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzip) {  // the trailer: CRC-32, then the size mod 2^32, both little-endian
    std::array<unsigned char, 8> trailer{};
    if (size < 18) return unreadable("a gzip file too short for its header and trailer");
    in.seekg(-static_cast<std::streamoff>(trailer.size()), std::ios::end);
    in.read(reinterpret_cast<char*>(trailer.data()), trailer.size());
    if (in.gcount() != static_cast<std::streamsize>(trailer.size())) return unreadable("its gzip trailer");
    const std::uint32_t inflated = little_endian_u32(trailer.data() + 4);
    if (!with_checksum) return fmt::format("{} bytes", inflated);
    return fmt::format("{} bytes, CRC-32 {:#010x}", inflated, little_endian_u32(trailer.data()));
  }
  if (!with_checksum) return fmt::format("{} bytes", size);
  in.clear();
  in.seekg(0);
  std::vector<char> chunk(std::size_t{1} << 20);
  uLong crc = crc32_z(0L, Z_NULL, 0);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<z_size_t>(in.gcount()));
  }
  if (in.bad()) return unreadable("a read failed");
  return fmt::format("{} bytes, CRC-32 {:#010x}", size, crc);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> idx_files_identity(const std::string& dir, bool with_checksum) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* split : {"train", "t10k"}) {
    for (const char* kind : {"images-idx3", "labels-idx1"}) {
      const std::string base = fmt::format("{}-{}-ubyte", split, kind);
      std::string identity = "missing";
      for (const char* suffix : {"", ".gz"}) {  // load_idx_dataset's order: the raw name wins
        const std::filesystem::path path = std::filesystem::path(dir) / (base + suffix);
        std::error_code ec;
        if (std::filesystem::exists(path, ec)) {
          identity = identity_of(path, with_checksum);
          break;
        }
      }
      files.emplace_back(base, std::move(identity));
    }
  }
  return files;
}

}  // namespace gradsync
