#include "collectives/allreduce_method.hpp"

namespace gradsync {

AllreduceOptions resolve_transport(const Comm& comm, const AllreduceOptions& o, bool chunked) {
  const bool automatic = o.segment_bytes == kAutoSegmentBytes ||
                         (chunked && (o.chunk_bytes == kAutoChunkBytes || o.ring_window == kAutoRingWindow));
  return automatic ? with_transport_defaults(o, comm.on_one_node(), chunked) : o;
}

}  // namespace gradsync
