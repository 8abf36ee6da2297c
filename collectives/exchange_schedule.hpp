#pragma once
// The executor of the methods that are a fixed list of point-to-point exchanges: the ring, recursive doubling and
// recursive halving and doubling. A method only plans its schedule for one shape (count, type): which ranks each
// exchange sends to and receives from, which ranges of the buffer, and whether the received elements are added in or
// taken as they are. This class keeps the plan per shape, cuts each exchange into chunks and pieces, keeps a window
// of exchanges in flight, lands what arrives through the method's wire (ring_wire.hpp) and drives the stages.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/ring_wire.hpp"
#include "collectives/scratch_bytes.hpp"

namespace gradsync {

// What a family of exchanges is called and tagged by. Its texts are string literals.
struct ExchangeKind {
  int tag = 0;               // which of the method's reserved tags (0 .. tags - 1) its messages carry
  const char* waiting = "";  // the stage's watchdog text while such an exchange is in flight
  const char* irecv = "";    // names the MPI_Irecv in an MpiError
  const char* isend = "";    // names the MPI_Isend
};

// One exchange of this rank's schedule: sends `send` to rank `to` and receives `recv` from rank `from` (comm ranks;
// -1: nothing that way). Both sides of a message plan it from the same shape, so every send meets a receive of the
// same size, empty ones too.
struct Exchange {
  const ExchangeKind* kind = nullptr;
  int to = -1;
  int from = -1;
  ElementRange send{}, recv{};
  bool add = true;    // the received elements are added in (landing in scratch) or replace `recv`
  bool seal = false;  // `recv` is finished once landed: the wire seals it before it is sent on (ring_wire.hpp)
};

// A method's plan for one shape.
struct Schedule {
  std::vector<Exchange> steps;
  // Every step goes as `chunks` exchanges of at most `chunk` elements each way, the c-th covering elements
  // [c * chunk, (c + 1) * chunk) of its ranges; a chunk past a range's end is an empty message. `chunks` must be the
  // same on every rank (the ring takes it from its largest segment).
  std::size_t chunk = SIZE_MAX;
  std::size_t chunks = 1;
  // Exchanges in flight at once, clamped to 1..chunks: exchange i is posted once exchange i - window has landed,
  // and the chunk it sends is ready once the same chunk of the step before has landed, which holds while the
  // window is at most `chunks`. Every rank posts in the same order, so messages match one to one.
  std::size_t window = 1;
  std::size_t segment_bytes = kWholeMessages;  // each message cut into pieces of at most this (segments.hpp)
};

class ScheduledAllreduce : public Allreduce {
 protected:
  // Local (no communication) apart from reserving `tags` message tags on `comm` (Comm::reserve_tags: every rank
  // constructs its methods on a communicator in the same order). `wire` outlives this object (a static one).
  ScheduledAllreduce(Comm comm, AllreduceOptions options, const RingWire& wire, int tags);

  // Appends this rank's schedule for a reduction of `count` > 0 elements of `type` to `schedule` (cleared, with
  // the defaults above) on a communicator of two or more ranks. Called once per shape; the plan is reused until
  // another shape comes. Must plan at least one step.
  virtual void plan(std::size_t count, Dtype type, Schedule& schedule) const = 0;
  const RingWire& wire() const { return wire_; }

 private:
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  void require_supported(Dtype type) const override { wire_.require_supported(type); }
  void replan(std::size_t count, Dtype type);
  void size_buffers();
  std::size_t total_exchanges() const { return schedule_.chunks * schedule_.steps.size(); }
  ElementRange chunk_of(ElementRange range, std::size_t i) const;
  // Posts exchange `i` (chunk i % chunks of step i / chunks) into window slot i % window.
  void post(std::size_t i);
  // Adds or takes exchange `i`'s message once it has arrived.
  void land(std::size_t i);
  // Makes exchange `i` the stage to wait for.
  void wait_for(std::size_t i);
  std::size_t slot(std::size_t i) const { return i % schedule_.window; }

  const RingWire& wire_;
  int first_tag_;
  // The plan for one shape, and what it needs per window slot.
  bool planned_ = false;
  std::size_t planned_count_ = 0;
  Dtype planned_type_ = Dtype::f32;
  Schedule schedule_;
  std::size_t slot_requests_ = 0;        // the receive's pieces, then the send's
  std::size_t slot_scratch_bytes_ = 0;   // where a message lands when it is not taken in place
  std::size_t slot_outgoing_bytes_ = 0;  // this rank's values in wire format, when the wire converts them
  ScratchBytes scratch_, outgoing_;
  std::vector<MPI_Request> requests_;
  // The reduction in flight.
  std::byte* data_ = nullptr;
  std::size_t oldest_ = 0;  // the oldest exchange in flight: the stage waits for it
  std::size_t posted_ = 0;  // exchanges posted so far
};

}  // namespace gradsync
