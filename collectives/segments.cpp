#include "collectives/segments.hpp"
#include "collectives/wire_meter.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsync {

Segmenter::Segmenter(std::size_t segment_bytes, std::size_t element_bytes)
    : elements_(std::max<std::size_t>(1, segment_bytes / std::max<std::size_t>(1, element_bytes))),
      element_bytes_(element_bytes) {
  if (segment_bytes == kAutoSegmentBytes)
    throw std::invalid_argument("Segmenter: segment_bytes is 0 (automatic); build the method with make_allreduce");
}

std::size_t Segmenter::pieces(std::size_t count) const {
  return count == 0 ? 1 : count / elements_ + (count % elements_ != 0);
}

namespace {

// Calls post(k, first, size) for each piece k of a message of `count` elements cut into pieces of `elements`.
template <class Post>
void for_each_piece(std::size_t count, std::size_t elements, std::size_t pieces, Post post) {
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t first = k * elements;
    post(k, first, std::min(elements, count - std::min(count, first)));
  }
}

}  // namespace

void Segmenter::isend(const std::byte* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, const Comm& comm,
                      MPI_Request* requests, const char* what) const {
  for_each_piece(count, elements_, pieces(count), [&](std::size_t k, std::size_t first, std::size_t size) {
    check_mpi(MPI_Isend(buffer + first * element_bytes_, comm.to_int_count(size, "MPI_Isend"), type, peer, tag,
                        comm.native(), &requests[k]),
              what, comm.rank());
    note_sent(size, type, comm.rank());
  });
}

void Segmenter::irecv(std::byte* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, const Comm& comm,
                      MPI_Request* requests, const char* what) const {
  for_each_piece(count, elements_, pieces(count), [&](std::size_t k, std::size_t first, std::size_t size) {
    check_mpi(MPI_Irecv(buffer + first * element_bytes_, comm.to_int_count(size, "MPI_Irecv"), type, peer, tag,
                        comm.native(), &requests[k]),
              what, comm.rank());
  });
}

}  // namespace gradsync
