#pragma once
// How the ring's elements travel. The ring's loops only say which range of the buffer goes to the right neighbour
// and which range the left neighbour's message is added into (or overwrites); a wire decides what bytes stand for
// those elements in a message: the values as they are, or float32 values as bfloat16.
#include <mpi.h>

#include <cstddef>

#include "collectives/dtype.hpp"

namespace gradsync {

class RingWire {
 public:
  virtual ~RingWire() = default;
  // Bytes one element takes in a message, and the MPI type of one such element.
  virtual std::size_t element_bytes(Dtype type) const = 0;
  virtual MPI_Datatype mpi_element(Dtype type) const = 0;
  // Throws std::invalid_argument if this wire cannot carry `type`.
  virtual void require_supported(Dtype type) const = 0;
  // The message for `n` elements at `values`: `values` itself, or a converted copy written into `outgoing`
  // (room for one chunk). The result must stay untouched until the send completes.
  virtual const void* pack(const std::byte* values, std::size_t n, Dtype type, std::byte* outgoing) const = 0;
  // Where a message for the elements at `values` lands: in place when it overwrites them as they are, else in
  // `scratch` (room for one chunk).
  virtual void* landing(std::byte* values, bool overwrite, std::byte* scratch) const = 0;
  // After the message landed: values[i] += incoming[i], or values[i] = incoming[i] (a no-op if it landed in place).
  virtual void add(std::byte* values, const std::byte* incoming, std::size_t n, Dtype type) const = 0;
  virtual void overwrite(std::byte* values, const std::byte* incoming, std::size_t n, Dtype type) const = 0;
  // A segment this rank has finished summing, before it circulates in the all-gather.
  virtual void seal(std::byte* /*values*/, std::size_t /*n*/, Dtype /*type*/) const {}
};

// Values as they are: every type, exact.
const RingWire& native_wire();
// float32 only, as bfloat16: half the bytes. seal() rounds the owner's finished segment to bfloat16, so the owner
// keeps the very bits its neighbours receive and every rank ends with the same result.
const RingWire& bf16_wire();

}  // namespace gradsync
