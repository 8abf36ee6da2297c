#pragma once
// How a scheduled method's elements travel (exchange_schedule.hpp). A schedule only says which range of the buffer
// goes to a rank and which range a message is added into (or overwrites); a wire decides what bytes stand for those
// elements in a message: the values as they are, or float32 values as bfloat16 (the ring's "ring-bf16").
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
  // Whether pack() converts: then it needs `outgoing`, room for element_bytes() times the elements it packs.
  virtual bool converts() const = 0;
  // The message for `n` elements at `values`: `values` itself, or a converted copy written into `outgoing`.
  // The result must stay untouched until the send completes.
  virtual const void* pack(const std::byte* values, std::size_t n, Dtype type, std::byte* outgoing) const = 0;
  // Whether a message that overwrites its elements lands on them directly (they travel as they are); otherwise
  // every message lands in scratch and add() or overwrite() brings it in.
  virtual bool lands_in_place() const = 0;
  // After the message landed in scratch: values[i] += incoming[i], or values[i] = incoming[i].
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
