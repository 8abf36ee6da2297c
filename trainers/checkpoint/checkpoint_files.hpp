#pragma once
// The file-level steps a checkpoint set's writer and reader share: a directory made durable, a piece's stored CRC,
// and a piece file read back and checked against its manifest.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "model/checkpoint.hpp"
#include "model/checkpoint_manifest.hpp"

namespace gradsync {

// fsync of a directory, so that the entries made in it survive a crash. Throws CheckpointError naming `dir`.
void fsync_dir(const std::filesystem::path& dir);

// The CRC a checkpoint file image stores in its last 4 bytes (little-endian); `bytes` holds at least 4.
std::uint32_t stored_file_crc(std::span<const std::uint8_t> bytes);

// Piece `k` of manifest `m`, read from `path` and checked against the manifest: its file CRC and size, run, step
// and key range. Throws CheckpointError naming `path` and what differs.
Checkpoint read_piece(const std::filesystem::path& path, const Manifest& m, std::size_t k);

}  // namespace gradsync
