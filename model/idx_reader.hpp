#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/ layout):
// a 4-byte magic (0, 0, type, ndims), ndims big-endian uint32 dimensions, then the raw data.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsync {

// Any problem with a data file; the message names the file and what is wrong with it.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;  // prod(dims) bytes, row-major
};

// Reads an unsigned-byte IDX file, raw or gzip-compressed (detected by content, not by name).
// `expected_ndims` is checked against the header (3 for images, 1 for labels).
// Throws DataError for a missing file, a wrong magic, a wrong type or rank, zero dimensions,
// or a data size that differs from the header (truncated or trailing bytes).
IdxArray read_idx(const std::string& path, std::uint32_t expected_ndims);

}  // namespace gradsync
