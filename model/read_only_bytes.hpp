#pragma once
// Bytes that nothing writes after construction, held either in memory of their own or as a read-only shared
// mapping of a file. A mapping lets every rank of one process (SimGrid's SMPI runs each simulated rank as a thread)
// and every process of one host read a dataset from the same physical pages: the page cache holds MNIST once
// however many ranks load it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gradsync {

class ReadOnlyBytes {
 public:
  ReadOnlyBytes() = default;
  // Takes the bytes over (no copy).
  ReadOnlyBytes(std::vector<std::uint8_t> bytes);  // NOLINT(google-explicit-constructor): a vector is bytes

  // Maps all of `path` read-only and shared. Throws DataError naming the file when it cannot be opened or mapped.
  // An empty file gives an empty ReadOnlyBytes (mmap refuses zero bytes).
  static ReadOnlyBytes map_file(const std::string& path);

  // The bytes [offset, offset + size) of this one, sharing its storage. Requires offset + size <= this->size().
  ReadOnlyBytes slice(std::size_t offset, std::size_t size) const;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool mapped() const { return mapped_; }
  const std::uint8_t& operator[](std::size_t i) const { return data_[i]; }
  const std::uint8_t* begin() const { return data_; }
  const std::uint8_t* end() const { return data_ + size_; }
  std::span<const std::uint8_t> span() const { return {data_, size_}; }

  friend bool operator==(const ReadOnlyBytes& a, const ReadOnlyBytes& b);

 private:
  std::shared_ptr<const void> owner_;  // the vector or the mapping; shared by slices
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace gradsync
