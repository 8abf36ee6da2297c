#pragma once
// The pairwise keys of secure aggregation (Bonawitz et al. 2017): each rank draws an X25519 key pair, the public
// keys travel by one all-gather, and each pair of ranks derives the same 32-byte key from its Diffie-Hellman secret
// (libsodium's crypto_kx: BLAKE2b over the shared point and both public keys; the lower rank takes the client's
// role). The secret key is wiped as soon as the pair keys are derived; the pair keys are wiped when the PairKeys
// goes away. Nothing here is ever printed, logged or checkpointed: a run that resumes agrees new keys.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

inline constexpr std::size_t kPublicKeyBytes = 32;
inline constexpr std::size_t kPairKeyBytes = 32;
using PublicKey = std::array<unsigned char, kPublicKeyBytes>;

class PairKeys {
 public:
  // Collective over `comm`: every rank calls it, and gets the key it shares with each other rank. With a `seed`
  // (32 bytes; tests only) the key pair is derived from it (crypto_kx_seed_keypair) instead of drawn from the
  // operating system's random source. Throws std::runtime_error if libsodium cannot start or a peer's public key
  // is rejected (a low-order point).
  static PairKeys agree(const Comm& comm, std::optional<std::span<const unsigned char, 32>> seed = std::nullopt);
  // Local: the keys `rank` derives from its secret key `secret` (wiped here) and everyone's public keys
  // (publics[rank] its own). agree() is this after the all-gather; a test passes a tampered public key.
  static PairKeys derive(int rank, std::span<unsigned char, 32> secret, std::span<const PublicKey> publics);

  PairKeys(PairKeys&& other) noexcept = default;
  PairKeys& operator=(PairKeys&& other) noexcept;
  PairKeys(const PairKeys&) = delete;
  PairKeys& operator=(const PairKeys&) = delete;
  ~PairKeys();

  int rank() const { return rank_; }
  // How many ranks took part in the agreement: the ones whose masks a round must cancel.
  int workers() const { return workers_; }
  // The key shared with `peer` (!= rank(), < workers()); secret: for the mask stream only.
  std::span<const unsigned char, kPairKeyBytes> key(int peer) const;

 private:
  PairKeys() = default;
  void wipe();
  int rank_ = 0, workers_ = 0;
  std::vector<unsigned char> keys_;  // workers_ x kPairKeyBytes; this rank's own row unused (zero)
};

}  // namespace gradsync
