#include "model/read_only_bytes.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "model/data_error.hpp"

namespace gradsync {

ReadOnlyBytes::ReadOnlyBytes(std::vector<std::uint8_t> bytes) {
  auto owned = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  data_ = owned->data();
  size_ = owned->size();
  owner_ = std::move(owned);
}

ReadOnlyBytes ReadOnlyBytes::map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw DataError(fmt::format("{}: cannot stat: {}", path, std::strerror(err)));
  }
  ReadOnlyBytes out;
  out.mapped_ = true;
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes == 0) {
    ::close(fd);
    return out;
  }
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) throw DataError(fmt::format("{}: cannot map {} bytes: {}", path, bytes, std::strerror(err)));
  out.data_ = static_cast<const std::uint8_t*>(map);
  out.size_ = bytes;
  out.owner_ = std::shared_ptr<const void>(map, [bytes](const void* p) { ::munmap(const_cast<void*>(p), bytes); });
  return out;
}

ReadOnlyBytes ReadOnlyBytes::slice(std::size_t offset, std::size_t size) const {
  ReadOnlyBytes out = *this;
  out.data_ = data_ + offset;
  out.size_ = size;
  return out;
}

bool operator==(const ReadOnlyBytes& a, const ReadOnlyBytes& b) { return std::ranges::equal(a.span(), b.span()); }

}  // namespace gradsync
