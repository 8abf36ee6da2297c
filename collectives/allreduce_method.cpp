#include "collectives/allreduce_method.hpp"

#include <algorithm>

namespace gradsync {

std::unique_ptr<Allreduce> AllreduceMethod::make(const Comm& comm, const AllreduceOptions& o) const {
  check_method_options(name, options, o.own);
  return build(comm, o);
}

bool AllreduceMethod::takes(std::string_view key) const {
  return std::any_of(options.begin(), options.end(), [&](const MethodOption& o) { return o.key == key; });
}

AllreduceOptions resolve_transport(const Comm& comm, const AllreduceOptions& o, bool chunked) {
  const bool automatic = o.segment_bytes == kAutoSegmentBytes ||
                         (chunked && (o.chunk_bytes == kAutoChunkBytes || o.ring_window == kAutoRingWindow));
  return automatic ? with_transport_defaults(o, comm.on_one_node(), chunked) : o;
}

}  // namespace gradsync
