#pragma once
// Deterministic random numbers that are identical on every rank, compiler and standard library:
// std::uniform_*_distribution are implementation-defined, so we derive values from raw 64-bit draws ourselves.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace gradsync {

// SplitMix64: seeds independent streams from (seed, stream id) pairs.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// xoshiro256**: fast, small state, good statistical quality.
class Rng {
 public:
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0) {
    std::uint64_t x = splitmix64(seed ^ splitmix64(stream + 0x5851F42D4C957F2DULL));
    for (auto& s : s_) x = s = splitmix64(x);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 bits, exact in float.
  float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, n) for n < 2^32 (Lemire's multiply-shift on 32 bits; the tiny bias is irrelevant
  // here and deterministic).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(((next() >> 32) * n) >> 32); }
  std::uint64_t state_word(int i) const { return s_[i]; }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// Fills `perm` with a permutation of 0..perm.size()-1 that depends only on (seed, epoch). perm.size() <= 2^32.
inline void shuffled_indices(std::span<std::uint32_t> perm, std::uint64_t seed, std::uint64_t epoch) {
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::uint32_t>(i);
  Rng rng(seed, 0x1000 + epoch);
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
}

}  // namespace gradsync
