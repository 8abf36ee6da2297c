#include "privacy/secure_aggregator.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <array>
#include <cstring>
#include <stdexcept>

#include "collectives/mpi_error.hpp"
#include "model/rng.hpp"

namespace gradsync {

std::string round_refusal(int keyed, int live) {
  if (keyed == live) return {};
  return fmt::format(
      "secure aggregation: {} of the {} workers whose pair masks this round carries are present; the masks of the "
      "missing ones cannot be removed without Bonawitz's secret-shared seeds, which gradsync does not build, so the "
      "round is refused: agree new pair keys over the survivors and aggregate again",
      live, keyed);
}

std::uint32_t check_word(std::uint64_t step, int rank, std::size_t i) {
  return static_cast<std::uint32_t>(
      splitmix64(step ^ splitmix64(static_cast<std::uint64_t>(rank) * kCheckWords + i + 0x5EC0A66ULL)));
}

void apply_pair_mask(std::span<std::uint32_t> words, std::span<const unsigned char, kPairKeyBytes> key,
                     std::uint64_t step, int sign, std::span<std::uint32_t> stream) {
  static_assert(crypto_stream_chacha20_KEYBYTES == kPairKeyBytes && crypto_stream_chacha20_NONCEBYTES == 8);
  if (stream.size() < words.size())
    throw std::invalid_argument(
        fmt::format("apply_pair_mask: {} words of scratch for {} words", stream.size(), words.size()));
  std::array<unsigned char, 8> nonce{};
  for (std::size_t b = 0; b < nonce.size(); ++b) nonce[b] = static_cast<unsigned char>(step >> (8 * b));
  auto* bytes = reinterpret_cast<unsigned char*>(stream.data());
  crypto_stream_chacha20(bytes, words.size() * sizeof(std::uint32_t), nonce.data(), key.data());
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::uint32_t m;  // little-endian on every host, so two hosts read the same stream as the same words
    m = static_cast<std::uint32_t>(bytes[4 * i]) | static_cast<std::uint32_t>(bytes[4 * i + 1]) << 8 |
        static_cast<std::uint32_t>(bytes[4 * i + 2]) << 16 | static_cast<std::uint32_t>(bytes[4 * i + 3]) << 24;
    words[i] = sign > 0 ? words[i] + m : words[i] - m;
  }
  sodium_memzero(bytes, words.size() * sizeof(std::uint32_t));
}

SecureAggregator::SecureAggregator(Comm comm, PairKeys keys, FixedPoint fixed_point, std::size_t count)
    : comm_(std::move(comm)), keys_(std::move(keys)), fixed_point_(fixed_point), count_(count),
      wire_(count + kCheckWords), stream_(count + kCheckWords) {
  if (const std::string why = round_refusal(keys_.workers(), comm_.size()); !why.empty()) throw std::runtime_error(why);
  if (keys_.rank() != comm_.rank())
    throw std::invalid_argument(fmt::format("SecureAggregator: keys of rank {} on rank {}", keys_.rank(), comm_.rank()));
  if (fixed_point_.workers() != comm_.size())
    throw std::invalid_argument(fmt::format("SecureAggregator: a fixed point with headroom for {} workers on {}",
                                            fixed_point_.workers(), comm_.size()));
}

std::span<std::uint32_t> SecureAggregator::encode(std::span<const float> values, std::uint64_t step) {
  if (values.size() != count_)
    throw std::invalid_argument(
        fmt::format("SecureAggregator::encode: {} values for a plan of {}", values.size(), count_));
  if (encoded_ && step <= step_)
    throw std::logic_error(fmt::format(
        "SecureAggregator::encode: step {} after step {}: a step's masks are used once (reused, they would leak the "
        "difference of two gradients)",
        step, step_));
  step_ = step;
  encoded_ = true;
  std::span<std::uint32_t> wire(wire_);
  clipped_ = fixed_point_.quantize(values, wire.first(count_));
  for (std::size_t i = 0; i < kCheckWords; ++i) wire[count_ + i] = check_word(step, comm_.rank(), i);
  for (int peer = 0; peer < comm_.size(); ++peer)
    if (peer != comm_.rank()) apply_pair_mask(wire, keys_.key(peer), step, peer > comm_.rank() ? 1 : -1, stream_);
  return wire;
}

void SecureAggregator::allreduce() {
  // Unsigned addition wraps mod 2^32 in C, which is how MPI's MPI_SUM on MPI_UINT32_T is computed.
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, wire_.data(), comm_.to_int_count(wire_.size(), "MPI_Allreduce (uint32 sum)"),
                          MPI_UINT32_T, MPI_SUM, comm_.native()),
            "MPI_Allreduce (uint32 sum)", comm_.rank());
}

void SecureAggregator::decode(std::span<float> sum) const {
  if (sum.size() != count_)
    throw std::invalid_argument(fmt::format("SecureAggregator::decode: {} values for a plan of {}", sum.size(), count_));
  for (std::size_t i = 0; i < kCheckWords; ++i) {
    std::uint32_t expected = 0;
    for (int r = 0; r < comm_.size(); ++r) expected += check_word(step_, r, i);
    if (wire_[count_ + i] != expected)
      throw std::runtime_error(fmt::format(
          "secure aggregation: the aggregate of step {} over {} ranks fails its check words: some rank's pair masks "
          "did not cancel (a wrong pair key or a skipped mask); the round is refused",
          step_, comm_.size()));
  }
  fixed_point_.dequantize(std::span<const std::uint32_t>(wire_).first(count_), sum);
}

void SecureAggregator::sum(std::span<const float> values, std::span<float> sum, std::uint64_t step) {
  encode(values, step);
  allreduce();
  decode(sum);
}

}  // namespace gradsync
