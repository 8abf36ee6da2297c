#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "collectives/allreduce.hpp"

namespace gradsync {

// Ring allreduce (Patarasuk & Yuan; the baidu-allreduce / Horovod / Gloo ring). The buffer is cut into P
// segments; P-1 reduce-scatter steps leave each rank with one fully summed segment, P-1 all-gather steps
// circulate the summed segments. Each rank sends 2(P-1)/P of the buffer, whatever P is. Messages are at most
// options.chunk_bytes, and the only scratch memory is one chunk (two on a bf16 wire), allocated here, once.
// With options.bf16_wire ("ring-bf16", float32 only) every message carries bfloat16: partial sums are rounded
// once per reduce-scatter hop and added in float32; each finished segment is rounded once by its owner, which keeps
// the rounded value too, so every rank ends with the same bits.
class RingAllreduce final : public Allreduce {
 public:
  // Collective only in make_allreduce, which resolves options.chunk_bytes; here it must already be > 0
  // (std::invalid_argument otherwise: a 0 would silently mean one-element messages).
  RingAllreduce(Comm comm, AllreduceOptions options);
  std::string_view name() const override { return options_.bf16_wire ? "ring-bf16" : "ring"; }

 private:
  void reduce(void* data, std::size_t count, Dtype type) override;
  void require_supported(Dtype type) const override;  // a bf16 wire carries float32 only
  void reduce_scatter(std::byte* data, std::size_t count, Dtype type);
  void all_gather(std::byte* data, std::size_t count, Dtype type);
  // Elements per message: options.chunk_bytes worth, but at least one element (the scratch holds one).
  std::size_t chunk_elements(std::size_t element_bytes) const {
    return std::max<std::size_t>(1, options_.chunk_bytes / element_bytes);
  }
  // Bytes one element takes in a message: 2 on a bf16 wire.
  std::size_t wire_bytes(Dtype type) const { return options_.bf16_wire ? 2 : dtype_size(type); }

  int left_;
  int right_;
  std::vector<std::byte> scratch_;  // one chunk: where a neighbour's partial sums land before being added
  std::vector<std::uint16_t> outgoing_;  // bf16 wire: one chunk of this rank's values, converted for sending
};

}  // namespace gradsync
