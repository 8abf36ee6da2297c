#pragma once
// Pairwise exchanges in pieces. When two ranks send to each other at once over TCP, a large message's rendezvous
// handshake (the receiver's clear-to-send) rides the same connection as the data flowing the other way and waits
// behind it, so every large message stalls its direction of the link while that backlog drains. A message under
// the transport's eager limit needs no handshake: a pairwise exchange between hosts therefore sends its data as
// several such messages, all posted at once (docs/algorithms.md). Both sides cut a message the same way from its
// element count alone, so every piece meets a receive of the same size and MPI's non-overtaking order pairs them.
#include <cstddef>
#include <cstdint>

#include "collectives/comm.hpp"

namespace gradsync {

// options.segment_bytes (allreduce.hpp): resolved per communicator by make_allreduce, like the ring's chunk.
inline constexpr std::size_t kAutoSegmentBytes = 0;
// Between hosts: under the eager limit of Open MPI's TCP transport with room for its header.
inline constexpr std::size_t kNetworkSegmentBytes = std::size_t{32} << 10;
// On shared memory there is no handshake to hide, and one large message takes the single-copy path.
inline constexpr std::size_t kWholeMessages = SIZE_MAX;

// One way of cutting messages of one element size into pieces of at most `segment_bytes` (> 0) bytes.
class Segmenter {
 public:
  Segmenter(std::size_t segment_bytes, std::size_t element_bytes);
  // Messages a range of `count` elements becomes: at least one (an empty message still meets its receive).
  std::size_t pieces(std::size_t count) const;
  // Posts `count` elements at `buffer` to `peer` (isend) or from it (irecv) as pieces(count) messages, one request
  // each into requests[0 .. pieces(count)), which the caller owns and must not reuse until they complete. `what`
  // names the call in an MpiError (a string literal such as "MPI_Isend (ring, to the right neighbour)").
  void isend(const std::byte* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, const Comm& comm,
             MPI_Request* requests, const char* what) const;
  void irecv(std::byte* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, const Comm& comm,
             MPI_Request* requests, const char* what) const;

 private:
  std::size_t elements_;  // per piece, >= 1
  std::size_t element_bytes_;
};

}  // namespace gradsync
