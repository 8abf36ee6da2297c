#pragma once
// How a compressor that sends its own parts (top-k, sign) writes a worker's gradient as a part of 32-bit words and
// adds a part up. Two exchanges share it: the all-gather between workers (gathering_compressor.hpp) and the
// parameter server's compressed push (compressed_push.hpp). A codec is planned once on a range's tensors, and every
// part it writes has the planned size, so a receiver can post its buffer before the part arrives.
#include <cstddef>
#include <cstdint>
#include <span>

namespace gradsync {

class PartCodec {
 public:
  virtual ~PartCodec() = default;
  // Words in every part.
  virtual std::size_t words() const = 0;
  // Writes the part of `in` into `part` (words() words) and the contribution a decoder adds up from it into `mine`.
  // `in` and `mine` hold the planned count of floats and do not overlap; all three are the caller's.
  virtual void encode(std::span<const float> in, std::span<float> mine, std::span<std::int32_t> part) = 0;
  // Adds the contribution `part` encodes into `out` (the planned count). Throws std::runtime_error on a part no
  // codec of this plan writes (an index beyond the range).
  virtual void add_part(std::span<const std::int32_t> part, std::span<float> out) const = 0;
};

}  // namespace gradsync
