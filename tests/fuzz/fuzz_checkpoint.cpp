// libFuzzer target for parse_checkpoint (model/checkpoint.hpp). Contract under test: any byte sequence yields a
// Checkpoint or a CheckpointError, never a crash, a sanitizer report or an allocation beyond -rss_limit_mb; and
// a Checkpoint it accepts serializes back to exactly the input bytes (the format has one encoding per value).
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "model/checkpoint.hpp"

namespace {

// Offsets from the layout table in model/checkpoint.hpp.
constexpr std::size_t kHeaderCrcOffset = 52;
constexpr std::size_t kHeaderBytes = 56;
constexpr std::size_t kCrcBytes = 4;

void put_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void parse_and_check(std::span<const std::uint8_t> bytes) {
  gradsync::Checkpoint c;
  try {
    c = gradsync::parse_checkpoint(bytes, "fuzz-input");
  } catch (const gradsync::CheckpointError&) {
    return;  // the documented way to refuse a file
  }
  const std::vector<std::uint8_t> again = gradsync::serialize_checkpoint(c, "fuzz-input");
  if (!std::equal(again.begin(), again.end(), bytes.begin(), bytes.end())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parse_and_check({data, size});

  // Random mutations almost never keep both CRC-32s right, so on its own the fuzzer would mostly test the
  // checksum comparison. Parsing a copy with both checksums recomputed reaches the code behind them: a
  // self-consistent header with arbitrary counts, step and epoch, and arbitrary payload lengths.
  if (size >= kHeaderBytes + kCrcBytes) {
    std::vector<std::uint8_t> fixed(data, data + size);
    put_le32(&fixed[kHeaderCrcOffset], static_cast<std::uint32_t>(crc32_z(0, fixed.data(), kHeaderCrcOffset)));
    put_le32(&fixed[size - kCrcBytes], static_cast<std::uint32_t>(crc32_z(0, fixed.data(), size - kCrcBytes)));
    parse_and_check(fixed);
  }
  return 0;
}
