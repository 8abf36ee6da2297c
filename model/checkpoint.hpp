#pragma once
// Training checkpoints: everything a run needs to resume exactly where it stopped, in one self-checking file.
//
// File layout, version 1. Every field is little-endian and fixed-width; floats are IEEE-754 binary32 bit patterns.
//
//   offset  bytes  field
//        0      8  magic            "GSYNCKPT" (ASCII, no terminator)
//        8      4  version          u32, 1
//       12      4  config_bytes     u32, length of the configuration fingerprint (at most kMaxConfigBytes)
//       16      8  step             i64, global optimizer steps taken (>= 0)
//       24      8  epoch            i64, epochs completed (>= 0)
//       32      8  param_count      u64, floats in the parameter vector (at most kMaxCheckpointFloats)
//       40      8  optimizer_count  u64, floats in the optimizer state (0 for plain SGD; at most kMaxCheckpointFloats)
//       48      4  rng_count        u32, 64-bit words of RNG / shuffle state (at most kMaxRngWords)
//       52      4  header_crc       u32, CRC-32 of bytes [0, 52)
//       56         config           config_bytes bytes, the configuration fingerprint (not NUL-terminated)
//                  params           param_count * 4 bytes
//                  optimizer_state  optimizer_count * 4 bytes
//                  rng              rng_count * 8 bytes
//   size-4      4  file_crc         u32, CRC-32 (zlib's crc32) of every byte before it, header included
//
// The header carries its own CRC so that a damaged length field is reported as corruption rather than
// misread as truncation, and so the reader never trusts a length before it has been verified. A file must be
// exactly as long as its header says: shorter is "truncated", longer is refused as trailing bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsync {

// Any problem writing, reading or matching a checkpoint; the message names the file and what is wrong.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t kCheckpointVersion = 1;
// Limits a reader enforces before trusting a length, and a writer enforces so it never writes a file the reader
// would refuse. Far above anything gradsync trains (MNIST MLPs have ~1e5 parameters), far below "corrupt".
inline constexpr std::uint32_t kMaxConfigBytes = 64 * 1024;
inline constexpr std::uint32_t kMaxRngWords = 1024;
inline constexpr std::uint64_t kMaxCheckpointFloats = std::uint64_t{1} << 32;

struct Checkpoint {
  // Describes the run; resuming requires an identical string. The caller chooses what goes in (model layer
  // sizes, sync method, dataset, batch, lr, seed, ...) and builds it the same way when writing and resuming.
  std::string config;
  std::vector<float> params;
  std::vector<float> optimizer_state;  // e.g. Sgd::state(): empty without momentum
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::vector<std::uint64_t> rng;  // a few words: whatever the trainer needs to redraw its shuffles

  bool operator==(const Checkpoint&) const = default;  // floats compare by value, so NaN != NaN
};

// The file image of `checkpoint` in the layout above. Throws CheckpointError (naming `name`) if a field exceeds
// the format's limits or step/epoch is negative.
std::vector<std::uint8_t> serialize_checkpoint(const Checkpoint& checkpoint, const std::string& name);

// Writes `checkpoint` to `path` atomically: into a temporary file in the same directory, fsync'd, renamed over
// `path`, then the directory fsync'd. Either the new checkpoint is in place or `path` is untouched (an older
// checkpoint there survives) and the temporary file is removed. Throws CheckpointError naming `path`, the step
// that failed and the OS error. A process killed mid-write can leave a `.<name>.tmp-XXXXXX` file beside `path`;
// it is never mistaken for a checkpoint, since readers open `path` only.
void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Decodes and validates a file image; `name` (usually the path) is used in messages. Every length is verified
// against the header CRC, the format's limits and the input size before anything is allocated, so any byte
// sequence yields either a valid Checkpoint or a CheckpointError; it never crashes or over-allocates (fuzzed).
// Refuses, saying which: "truncated", "not a gradsync checkpoint" (bad magic), "unsupported checkpoint
// version", "corrupted" (a checksum mismatch, or a verified header with impossible values), "trailing bytes".
Checkpoint parse_checkpoint(std::span<const std::uint8_t> bytes, const std::string& name);

// Writes `bytes` to `path` the way write_checkpoint does (temporary file, fsync, rename, directory fsync): either
// the new content is in place or `path` is untouched. Throws CheckpointError naming `path` and the failed step.
void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes);

// CRC-32 (zlib's) of the floats' IEEE-754 bit patterns in little-endian order, the bytes a checkpoint stores.
std::uint32_t crc32_floats(std::span<const float> values);
// The CRC-32 of A followed by B, from crc(A), crc(B) and B's length in bytes (zlib's crc32_combine): lets a
// sharded state's digest be built from its shards' CRCs without gathering the shards.
std::uint32_t crc32_concat(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t bytes_b);

// Reads and validates the checkpoint at `path` (parse_checkpoint on its bytes). Throws CheckpointError for a
// missing or unreadable file as well as for every problem parse_checkpoint detects. It does not check that the
// checkpoint belongs to the current run: call check_compatible before using it.
Checkpoint read_checkpoint(const std::string& path);

// Refuses a checkpoint from a different run: throws CheckpointError naming `path` and both fingerprints
// ("expected ..., found ...") if checkpoint.config != expected_config, or both counts if the parameter vector
// does not hold `expected_params` floats. The optimizer state's size depends on the optimizer, so the caller
// compares it with its optimizer's own state size.
void check_compatible(const Checkpoint& checkpoint, const std::string& expected_config, std::size_t expected_params,
                      const std::string& path);

}  // namespace gradsync
