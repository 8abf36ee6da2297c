#pragma once
#include <memory>

#include "collectives/allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace gradsync {

// Two-level allreduce, as NCCL's 2D ring: the L ranks of each host reduce-scatter among themselves (a ring through
// shared memory), each local rank then carries its own slice across the network in a ring with the ranks of the
// same local index on the other hosts, and the host's ranks all-gather the slices. Each rank sends only 2(H-1)/H of
// its slice, 1/L of the buffer, over the network (H hosts), and all L ranks of a host use the link at once.
// Every element's sum is made by the cross-host ring of its slice and copied from there, so every rank ends with
// the same bits.
// Hosts are found with MPI_Comm_split_type(SHARED); its own option ranks_per_host > 0 ("hier:ranks_per_host=2")
// instead groups consecutive ranks into hosts of that size (how tests and benchmarks emulate several hosts on one
// node).
class HierAllreduce final : public Allreduce {
 public:
  // Collective over `comm` (it splits it). Every host must have the same number of ranks: otherwise every rank
  // throws std::invalid_argument naming the smallest and largest count. options.chunk_bytes == kAutoChunkBytes
  // gives each level its own (shared memory inside a host, network across hosts); options().chunk_bytes then reports
  // the one across hosts.
  HierAllreduce(Comm comm, AllreduceOptions options);
  std::string_view name() const override { return "hier"; }
  int ranks_per_host() const { return local_.size(); }

 private:
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  // Begins part `i` (0: reduce-scatter, 1: across hosts, 2: all-gather) or the first one after it that has
  // something to do; false when none is left.
  bool begin_part(int i);

  Comm local_, cross_;
  std::unique_ptr<RingAllreduce> parts_[3];  // null where that level has one rank
  // The reduction in flight.
  std::byte* data_ = nullptr;
  std::size_t count_ = 0;
  Dtype type_ = Dtype::f32;
  int part_ = 0;
};

}  // namespace gradsync
