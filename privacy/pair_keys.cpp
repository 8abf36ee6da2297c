#include "privacy/pair_keys.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <cstring>
#include <stdexcept>

namespace gradsync {
namespace {

void start_sodium() {
  if (sodium_init() < 0) throw std::runtime_error("PairKeys: libsodium could not start (sodium_init failed)");
}

}  // namespace

PairKeys PairKeys::agree(const Comm& comm, std::optional<std::span<const unsigned char, 32>> seed) {
  start_sodium();
  static_assert(crypto_kx_PUBLICKEYBYTES == kPublicKeyBytes && crypto_kx_SECRETKEYBYTES == 32 &&
                crypto_kx_SEEDBYTES == 32 && crypto_kx_SESSIONKEYBYTES == kPairKeyBytes);
  PublicKey mine{};
  std::array<unsigned char, 32> secret{};
  if (seed)
    crypto_kx_seed_keypair(mine.data(), secret.data(), seed->data());
  else
    crypto_kx_keypair(mine.data(), secret.data());
  std::array<char, kPublicKeyBytes> wire{};
  std::memcpy(wire.data(), mine.data(), kPublicKeyBytes);
  std::vector<char> all;
  try {
    all = comm.all_gather(wire);
  } catch (...) {
    sodium_memzero(secret.data(), secret.size());
    throw;
  }
  std::vector<PublicKey> publics(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < publics.size(); ++r)
    std::memcpy(publics[r].data(), all.data() + r * kPublicKeyBytes, kPublicKeyBytes);
  return derive(comm.rank(), secret, publics);
}

PairKeys PairKeys::derive(int rank, std::span<unsigned char, 32> secret, std::span<const PublicKey> publics) {
  start_sodium();
  PairKeys keys;
  keys.rank_ = rank;
  keys.workers_ = static_cast<int>(publics.size());
  keys.keys_.assign(publics.size() * kPairKeyBytes, 0);
  const PublicKey& mine = publics[static_cast<std::size_t>(rank)];
  std::array<unsigned char, kPairKeyBytes> unused{};
  for (int peer = 0; peer < keys.workers_; ++peer) {
    if (peer == rank) continue;
    unsigned char* key = keys.keys_.data() + static_cast<std::size_t>(peer) * kPairKeyBytes;
    const PublicKey& theirs = publics[static_cast<std::size_t>(peer)];
    // The client's transmit key is the server's receive key: the lower rank is the client.
    const int rc = rank < peer
                       ? crypto_kx_client_session_keys(unused.data(), key, mine.data(), secret.data(), theirs.data())
                       : crypto_kx_server_session_keys(key, unused.data(), mine.data(), secret.data(), theirs.data());
    if (rc != 0) {
      sodium_memzero(secret.data(), secret.size());
      sodium_memzero(unused.data(), unused.size());
      throw std::runtime_error(fmt::format("PairKeys: rank {} rejected rank {}'s public key", rank, peer));
    }
  }
  sodium_memzero(unused.data(), unused.size());
  sodium_memzero(secret.data(), secret.size());
  return keys;
}

PairKeys& PairKeys::operator=(PairKeys&& other) noexcept {
  if (this != &other) {
    wipe();
    rank_ = other.rank_;
    workers_ = other.workers_;
    keys_ = std::move(other.keys_);
  }
  return *this;
}

PairKeys::~PairKeys() { wipe(); }

void PairKeys::wipe() {
  if (!keys_.empty()) sodium_memzero(keys_.data(), keys_.size());
  keys_.clear();
}

std::span<const unsigned char, kPairKeyBytes> PairKeys::key(int peer) const {
  if (peer < 0 || peer >= workers_ || peer == rank_)
    throw std::invalid_argument(
        fmt::format("PairKeys::key: rank {} shares no key with rank {} (of {})", rank_, peer, workers_));
  return std::span<const unsigned char, kPairKeyBytes>(keys_.data() + static_cast<std::size_t>(peer) * kPairKeyBytes,
                                                       kPairKeyBytes);
}

}  // namespace gradsync
