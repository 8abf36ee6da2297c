#include "model/idx_reader.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

namespace gradsync {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
// MNIST's largest file is 47 MB; anything claiming more than this is corrupt, not big.
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 32;

// gzread reads gzip and plain files alike, which is how `--data DIR` accepts both.
std::vector<std::uint8_t> read_whole_file(const std::string& path) {
  std::unique_ptr<gzFile_s, decltype(&gzclose)> f(gzopen(path.c_str(), "rb"), &gzclose);
  if (!f) throw DataError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::vector<std::uint8_t> bytes;
  std::array<std::uint8_t, 1 << 16> block;
  for (;;) {
    const int n = gzread(f.get(), block.data(), static_cast<unsigned>(block.size()));
    if (n < 0) {
      int code = 0;
      throw DataError(fmt::format("{}: read error: {}", path, gzerror(f.get(), &code)));
    }
    if (n == 0) {
      // gzread reports a gzip stream cut short (e.g. a missing CRC trailer) only through gzerror.
      int code = Z_OK;
      gzerror(f.get(), &code);
      if (code == Z_BUF_ERROR) throw DataError(fmt::format("{}: truncated gzip stream", path));
      break;
    }
    bytes.insert(bytes.end(), block.begin(), block.begin() + n);
    if (bytes.size() > kMaxPayloadBytes) throw DataError(fmt::format("{}: larger than 4 GiB; not an MNIST file", path));
  }
  return bytes;
}

// gzip's two magic bytes; an IDX file starts with two zeros.
bool is_gzip(const ReadOnlyBytes& bytes) { return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b; }

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

IdxArray read_idx(const std::string& path, std::uint32_t expected_ndims, IdxStorage storage) {
  ReadOnlyBytes bytes = storage == IdxStorage::map ? ReadOnlyBytes::map_file(path) : ReadOnlyBytes{};
  if (!bytes.mapped() || is_gzip(bytes)) bytes = read_whole_file(path);
  if (bytes.size() < 4)
    throw DataError(fmt::format("{}: truncated: {} bytes, too short for an IDX header", path, bytes.size()));
  if (bytes[0] != 0 || bytes[1] != 0)
    throw DataError(fmt::format("{}: bad magic number 0x{:02x}{:02x}{:02x}{:02x}: not an IDX file", path, bytes[0],
                                bytes[1], bytes[2], bytes[3]));
  if (bytes[2] != kTypeUnsignedByte)
    throw DataError(fmt::format("{}: element type 0x{:02x} is not unsigned byte (0x08)", path, bytes[2]));
  const std::uint32_t ndims = bytes[3];
  if (ndims != expected_ndims)
    throw DataError(fmt::format("{}: has {} dimensions, expected {}", path, ndims, expected_ndims));
  const std::size_t header = 4 + 4 * std::size_t{ndims};
  if (bytes.size() < header)
    throw DataError(fmt::format("{}: truncated header: {} bytes, need {}", path, bytes.size(), header));

  IdxArray out;
  std::uint64_t payload = 1;
  for (std::uint32_t d = 0; d < ndims; ++d) {
    const std::uint32_t dim = big_endian_u32(&bytes[4 + 4 * d]);
    if (dim == 0) throw DataError(fmt::format("{}: dimension {} is zero", path, d));
    payload *= dim;
    if (payload > kMaxPayloadBytes) throw DataError(fmt::format("{}: dimensions multiply to more than 4 GiB", path));
    out.dims.push_back(dim);
  }
  const std::uint64_t have = bytes.size() - header;
  if (have < payload)
    throw DataError(fmt::format("{}: truncated: header promises {} data bytes, file has {}", path, payload, have));
  if (have > payload)
    throw DataError(
        fmt::format("{}: {} trailing bytes after the {} data bytes the header describes", path, have - payload, payload));
  out.data = bytes.slice(header, payload);
  return out;
}

}  // namespace gradsync
