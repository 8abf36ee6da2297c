#pragma once
// Reader for the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/ layout):
// a 4-byte magic (0, 0, type, ndims), ndims big-endian uint32 dimensions, then the raw data.
#include <cstdint>
#include <string>
#include <vector>

#include "model/data_error.hpp"
#include "model/read_only_bytes.hpp"

namespace gradsync {

// Where read_idx puts the data: a copy in memory of its own, or a read-only shared mapping of the file (a raw file
// only; a gzip-compressed one is always inflated into memory).
enum class IdxStorage { copy, map };

struct IdxArray {
  std::vector<std::uint32_t> dims;
  ReadOnlyBytes data;  // prod(dims) bytes, row-major
};

// Reads an unsigned-byte IDX file, raw or gzip-compressed (detected by content, not by name).
// `expected_ndims` is checked against the header (3 for images, 1 for labels).
// Throws DataError for a missing file, a wrong magic, a wrong type or rank, zero dimensions,
// or a data size that differs from the header (truncated or trailing bytes).
IdxArray read_idx(const std::string& path, std::uint32_t expected_ndims, IdxStorage storage = IdxStorage::copy);

}  // namespace gradsync
