#pragma once
// Secure aggregation of one gradient buffer per step (Bonawitz et al. 2017, without dropout recovery): each rank
// quantizes its values to fixed point in Z_2^32 (privacy/fixed_point.hpp), appends kCheckWords check words, and adds
// for every other rank s the ChaCha20 key stream of their pair key (nonce = the step) word by word: + toward a
// higher rank, - toward a lower one. Every pair's stream enters the sum once with each sign, so an exact uint32
// allreduce with wrapping addition returns the sum of the quantized values, while a single rank's wire vector is
// indistinguishable from uniform without the pair keys.
//
// A wrong pair key or a skipped mask leaves a pseudo-random error in every word, check words included: decode()
// compares the check words with their known sum and refuses the round (all ranks see the same aggregate, so all
// refuse together). That detects faults (a misconfigured rank, a bug), not a malicious rank, which could mask its
// check words alone. A rank lost mid-round: the survivors cannot remove its masks (that needs Bonawitz's secret-shared
// seeds, not built), so round_refusal() refuses the round; re-key over the survivors' communicator.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "privacy/fixed_point.hpp"
#include "privacy/pair_keys.hpp"

namespace gradsync {

inline constexpr std::size_t kCheckWords = 2;

// Why a round of `keyed` workers' masks cannot be opened with `live` workers present, or "" when live == keyed.
std::string round_refusal(int keyed, int live);

// The check word `i` rank `rank` contributes at `step`: public, the same on every rank.
std::uint32_t check_word(std::uint64_t step, int rank, std::size_t i);

// Adds (sign > 0) or subtracts the ChaCha20 key stream of `key` at nonce `step` to words, element by element mod
// 2^32 (the stream's bytes read as little-endian words). `stream` is scratch of words.size() words.
void apply_pair_mask(std::span<std::uint32_t> words, std::span<const unsigned char, kPairKeyBytes> key,
                     std::uint64_t step, int sign, std::span<std::uint32_t> stream);

class SecureAggregator {
 public:
  // A plan for `count` values per step over `comm`, whose ranks agreed `keys` (same size; round_refusal's error as
  // std::runtime_error otherwise). The fixed point must be for comm.size() workers. Allocates its buffers here.
  SecureAggregator(Comm comm, PairKeys keys, FixedPoint fixed_point, std::size_t count);

  // Quantizes `values` (count elements) with their check words into the wire buffer and masks it for `step`; returns
  // the buffer (count + kCheckWords words, owned by this plan) to be summed by any exact uint32 allreduce. Steps
  // must increase from one call to the next (a step's key stream used twice would leak the difference of two
  // gradients): std::logic_error otherwise. Local.
  std::span<std::uint32_t> encode(std::span<const float> values, std::uint64_t step);
  // Collective: MPI_Allreduce of the wire buffer in place, MPI_UINT32_T under MPI_SUM (unsigned, so it wraps mod
  // 2^32). Every rank calls it after encode.
  void allreduce();
  // Checks the aggregate's check words and writes the dequantized sum (count elements). Throws std::runtime_error,
  // the same on every rank, if the masks did not cancel. Local.
  void decode(std::span<float> sum) const;
  // encode, allreduce and decode: `sum` (count elements) becomes the sum over ranks of the quantized `values`.
  void sum(std::span<const float> values, std::span<float> sum, std::uint64_t step);

  // The wire buffer: masked after encode, the aggregate after allreduce.
  std::span<const std::uint32_t> wire() const { return wire_; }
  std::span<std::uint32_t> wire() { return wire_; }
  const PairKeys& keys() const { return keys_; }
  const FixedPoint& fixed_point() const { return fixed_point_; }
  std::size_t count() const { return count_; }
  // Values clipped to the fixed point's range by the last encode.
  std::size_t clipped() const { return clipped_; }

 private:
  Comm comm_;
  PairKeys keys_;
  FixedPoint fixed_point_;
  std::size_t count_;
  std::vector<std::uint32_t> wire_, stream_;
  std::uint64_t step_ = 0;
  bool encoded_ = false;
  std::size_t clipped_ = 0;
};

}  // namespace gradsync
