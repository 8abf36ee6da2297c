#include "model/checkpoint.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <utility>

namespace gradsync {
namespace {

static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4, "the format stores IEEE-754 binary32");

// Field offsets; the table in checkpoint.hpp is the specification, these must match it.
constexpr std::array<std::uint8_t, 8> kMagic = {'G', 'S', 'Y', 'N', 'C', 'K', 'P', 'T'};
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kConfigBytesOffset = 12;
constexpr std::size_t kStepOffset = 16;
constexpr std::size_t kEpochOffset = 24;
constexpr std::size_t kParamCountOffset = 32;
constexpr std::size_t kOptimizerCountOffset = 40;
constexpr std::size_t kRngCountOffset = 48;
constexpr std::size_t kHeaderCrcOffset = 52;
constexpr std::size_t kHeaderBytes = 56;
constexpr std::size_t kCrcBytes = 4;

// With every count at its limit the sum stays far below 2^64, so size arithmetic on verified counts cannot wrap.
constexpr std::uint64_t file_bytes(std::uint64_t config, std::uint64_t params, std::uint64_t optimizer,
                                   std::uint64_t rng) {
  return kHeaderBytes + config + 4 * params + 4 * optimizer + 8 * rng + kCrcBytes;
}
constexpr std::uint64_t kMaxFileBytes =
    file_bytes(kMaxConfigBytes, kMaxCheckpointFloats, kMaxCheckpointFloats, kMaxRngWords);

// zlib's crc32 takes a 32-bit length; crc32_z takes size_t, so multi-GiB models need no chunking.
std::uint32_t crc32_of(std::span<const std::uint8_t> bytes) {
  return static_cast<std::uint32_t>(crc32_z(0, bytes.data(), bytes.size()));
}

// Little-endian encoding by shifts, so the file is the same whatever the host's byte order.
void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

CheckpointError invalid(const std::string& name, const std::string& problem) {
  return CheckpointError(fmt::format("{}: {}", name, problem));
}

// `errno_value` is captured right after the failing call (see os_error): formatting the message may change errno.
CheckpointError write_failed(const std::string& path, const std::string& step, int errno_value) {
  return CheckpointError(fmt::format("{}: cannot write checkpoint: {}: {}", path, step, std::strerror(errno_value)));
}

// 0 if a system call returning 0 on success succeeded, else its errno, read before anything can overwrite it.
int os_error(int rc) { return rc == 0 ? 0 : errno; }

// Full write despite short writes and signals; returns 0 or the errno of the failure.
int write_all(int fd, std::span<const std::uint8_t> bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// The temporary file of one write_checkpoint call: removed on every exit path except a successful rename.
class TempFile {
 public:
  TempFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // close(2) can report a deferred write error (NFS), so the caller checks it; the fd is gone either way.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void mark_renamed() { renamed_ = true; }

 private:
  int fd_;
  std::string path_;
  bool renamed_ = false;
};

}  // namespace

std::vector<std::uint8_t> serialize_checkpoint(const Checkpoint& c, const std::string& name) {
  const auto refuse = [&](const std::string& problem) {
    return CheckpointError(fmt::format("{}: cannot write checkpoint: {}", name, problem));
  };
  if (c.config.size() > kMaxConfigBytes)
    throw refuse(
        fmt::format("configuration fingerprint is {} bytes, the format allows {}", c.config.size(), kMaxConfigBytes));
  if (c.params.size() > kMaxCheckpointFloats)
    throw refuse(fmt::format("{} parameters, the format allows {}", c.params.size(), kMaxCheckpointFloats));
  if (c.optimizer_state.size() > kMaxCheckpointFloats)
    throw refuse(
        fmt::format("{} optimizer state values, the format allows {}", c.optimizer_state.size(), kMaxCheckpointFloats));
  if (c.rng.size() > kMaxRngWords)
    throw refuse(fmt::format("{} RNG state words, the format allows {}", c.rng.size(), kMaxRngWords));
  if (c.step < 0 || c.epoch < 0) throw refuse(fmt::format("negative step {} or epoch {}", c.step, c.epoch));

  std::vector<std::uint8_t> out(file_bytes(c.config.size(), c.params.size(), c.optimizer_state.size(), c.rng.size()));
  std::uint8_t* p = out.data();
  std::copy(kMagic.begin(), kMagic.end(), p);
  put_u32(p + kVersionOffset, kCheckpointVersion);
  put_u32(p + kConfigBytesOffset, static_cast<std::uint32_t>(c.config.size()));
  put_u64(p + kStepOffset, static_cast<std::uint64_t>(c.step));
  put_u64(p + kEpochOffset, static_cast<std::uint64_t>(c.epoch));
  put_u64(p + kParamCountOffset, c.params.size());
  put_u64(p + kOptimizerCountOffset, c.optimizer_state.size());
  put_u32(p + kRngCountOffset, static_cast<std::uint32_t>(c.rng.size()));
  put_u32(p + kHeaderCrcOffset, crc32_of({p, kHeaderCrcOffset}));

  p += kHeaderBytes;
  p = std::copy(c.config.begin(), c.config.end(), p);
  for (float v : c.params) put_u32(std::exchange(p, p + 4), std::bit_cast<std::uint32_t>(v));
  for (float v : c.optimizer_state) put_u32(std::exchange(p, p + 4), std::bit_cast<std::uint32_t>(v));
  for (std::uint64_t v : c.rng) put_u64(std::exchange(p, p + 8), v);
  put_u32(p, crc32_of({out.data(), out.size() - kCrcBytes}));
  return out;
}

Checkpoint parse_checkpoint(std::span<const std::uint8_t> bytes, const std::string& name) {
  const std::size_t size = bytes.size();
  const std::uint8_t* p = bytes.data();
  // Compare as much of the magic as exists: a short prefix of a real checkpoint is "truncated", anything else
  // is not ours at all.
  if (!std::equal(p, p + std::min(size, kMagic.size()), kMagic.begin()))
    throw invalid(name, "not a gradsync checkpoint (bad magic number)");
  if (size < kVersionOffset + 4)
    throw invalid(name, fmt::format("truncated: {} bytes, too short for a checkpoint header", size));
  // The version comes before the header checks: a later version may lay out its header differently.
  if (const std::uint32_t version = get_u32(p + kVersionOffset); version != kCheckpointVersion)
    throw invalid(name, fmt::format("unsupported checkpoint version {} (this build reads version {})", version,
                                    kCheckpointVersion));
  if (size < kHeaderBytes)
    throw invalid(name, fmt::format("truncated: {} bytes, shorter than the {}-byte header", size, kHeaderBytes));
  if (const std::uint32_t stored = get_u32(p + kHeaderCrcOffset), computed = crc32_of({p, kHeaderCrcOffset});
      stored != computed)
    throw invalid(name,
                  fmt::format("corrupted: header checksum mismatch (stored {:08x}, computed {:08x})", stored, computed));

  // The header is now known to be what the writer wrote; still check it, since a fuzzer (or a buggy writer)
  // can produce a self-consistent header with impossible values.
  const std::uint32_t config_bytes = get_u32(p + kConfigBytesOffset);
  const auto step = static_cast<std::int64_t>(get_u64(p + kStepOffset));
  const auto epoch = static_cast<std::int64_t>(get_u64(p + kEpochOffset));
  const std::uint64_t param_count = get_u64(p + kParamCountOffset);
  const std::uint64_t optimizer_count = get_u64(p + kOptimizerCountOffset);
  const std::uint32_t rng_count = get_u32(p + kRngCountOffset);
  if (config_bytes > kMaxConfigBytes || param_count > kMaxCheckpointFloats || optimizer_count > kMaxCheckpointFloats ||
      rng_count > kMaxRngWords)
    throw invalid(name, fmt::format("corrupted: header sizes beyond the format's limits (config {} bytes, {} "
                                    "parameters, {} optimizer values, {} RNG words)",
                                    config_bytes, param_count, optimizer_count, rng_count));
  if (step < 0 || epoch < 0) throw invalid(name, fmt::format("corrupted: negative step {} or epoch {}", step, epoch));
  const std::uint64_t expected = file_bytes(config_bytes, param_count, optimizer_count, rng_count);
  if (size < expected) throw invalid(name, fmt::format("truncated: header says {} bytes, file has {}", expected, size));
  if (size > expected)
    throw invalid(name, fmt::format("{} trailing bytes after the {}-byte checkpoint", size - expected, expected));
  if (const std::uint32_t stored = get_u32(p + size - kCrcBytes), computed = crc32_of({p, size - kCrcBytes});
      stored != computed)
    throw invalid(name, fmt::format("corrupted: checksum mismatch (stored {:08x}, computed {:08x})", stored, computed));

  // Every count is now bounded by the input's size, so these allocations are too.
  Checkpoint c;
  c.step = step;
  c.epoch = epoch;
  p += kHeaderBytes;
  c.config.assign(reinterpret_cast<const char*>(p), config_bytes);
  p += config_bytes;
  c.params.resize(param_count);
  for (float& v : c.params) v = std::bit_cast<float>(get_u32(std::exchange(p, p + 4)));
  c.optimizer_state.resize(optimizer_count);
  for (float& v : c.optimizer_state) v = std::bit_cast<float>(get_u32(std::exchange(p, p + 4)));
  c.rng.resize(rng_count);
  for (std::uint64_t& v : c.rng) v = get_u64(std::exchange(p, p + 8));
  return c;
}

Checkpoint read_checkpoint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw invalid(path, fmt::format("cannot open checkpoint: {}", std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) throw invalid(path, fmt::format("cannot stat checkpoint: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw invalid(path, "not a regular file");
  // Bounds the read buffer before allocating it: no valid checkpoint is larger than this.
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes)
    throw invalid(path,
                  fmt::format("{} bytes, more than the largest valid checkpoint ({} bytes)", st.st_size, kMaxFileBytes));

  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw invalid(path, fmt::format("cannot read checkpoint: {}", std::strerror(errno)));
    if (n == 0) break;  // the file shrank since fstat; parse reports what is there
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return parse_checkpoint(bytes, path);
}

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  write_file_atomically(path, serialize_checkpoint(checkpoint, path));
}

std::uint32_t crc32_floats(std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "crc32_floats hashes the in-memory bytes");
  return crc32_of({reinterpret_cast<const std::uint8_t*>(values.data()), values.size() * sizeof(float)});
}

std::uint32_t crc32_concat(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t bytes_b) {
  return static_cast<std::uint32_t>(crc32_combine(crc_a, crc_b, static_cast<z_off_t>(bytes_b)));
}

void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes) {
  // The temporary file must be in the target's directory: rename(2) is atomic only within one file system.
  const std::filesystem::path target(path);
  if (!target.has_filename()) throw invalid(path, "cannot write checkpoint: the path names a directory, not a file");
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string temp_path = (dir / fmt::format(".{}.tmp-XXXXXX", target.filename().string())).string();
  const int fd = ::mkostemp(temp_path.data(), O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    throw write_failed(path, fmt::format("creating a temporary file in {}", dir.string()), e);
  }
  TempFile temp(fd, temp_path);

  // mkostemp creates the file 0600; a checkpoint is an ordinary output file, readable like the CSVs.
  if (const int e = os_error(::fchmod(temp.fd(), 0644))) throw write_failed(path, "chmod " + temp.path(), e);
  if (const int e = write_all(temp.fd(), bytes)) throw write_failed(path, "writing " + temp.path(), e);
  if (const int e = os_error(::fsync(temp.fd()))) throw write_failed(path, "fsync of " + temp.path(), e);
  if (const int e = os_error(temp.close())) throw write_failed(path, "closing " + temp.path(), e);
  if (const int e = os_error(::rename(temp.path().c_str(), path.c_str())))
    throw write_failed(path, fmt::format("renaming {} over it", temp.path()), e);
  temp.mark_renamed();

  // Without this the rename itself may be lost in a crash, leaving the previous checkpoint (or none).
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    const int e = errno;
    throw write_failed(path, fmt::format("opening directory {} to fsync it", dir.string()), e);
  }
  const int e = os_error(::fsync(dir_fd));
  ::close(dir_fd);
  if (e != 0)
    throw write_failed(
        path,
        fmt::format("fsync of directory {} (the new checkpoint is in place but may not survive a crash)", dir.string()),
        e);
}

void check_compatible(const Checkpoint& checkpoint, const std::string& expected_config, std::size_t expected_params,
                      const std::string& path) {
  if (checkpoint.config != expected_config)
    throw invalid(path, fmt::format("checkpoint was written by a different run: expected \"{}\", found \"{}\"",
                                    expected_config, checkpoint.config));
  if (checkpoint.params.size() != expected_params)
    throw invalid(path, fmt::format("checkpoint holds {} parameters, this run's model has {}", checkpoint.params.size(),
                                    expected_params));
}

}  // namespace gradsync
