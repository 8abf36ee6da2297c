#include "collectives/exchange_schedule.hpp"

#include <algorithm>

namespace gradsync {

ScheduledAllreduce::ScheduledAllreduce(Comm comm, AllreduceOptions options, const RingWire& wire, int tags)
    : Allreduce(std::move(comm), options), wire_(wire), first_tag_(comm_.reserve_tags(tags)) {}

void ScheduledAllreduce::replan(std::size_t count, Dtype type) {
  if (planned_ && planned_count_ == count && planned_type_ == type) return;
  std::vector<Exchange> steps = std::move(schedule_.steps);  // keeps its capacity: shapes that alternate reuse it
  steps.clear();
  schedule_ = {.steps = std::move(steps)};
  plan(count, type, schedule_);
  schedule_.chunk = std::max<std::size_t>(1, schedule_.chunk);
  schedule_.chunks = std::max<std::size_t>(1, schedule_.chunks);
  schedule_.window = std::clamp<std::size_t>(schedule_.window, 1, schedule_.chunks);
  planned_ = true;
  planned_count_ = count;
  planned_type_ = type;
  size_buffers();
}

// Scratch and requests for the largest chunk any step moves, per window slot; grown, never shrunk, so a training
// run that alternates between a few shapes allocates only while it meets a larger one.
void ScheduledAllreduce::size_buffers() {
  const std::size_t wire_bytes = wire_.element_bytes(planned_type_);
  const Segmenter cut(schedule_.segment_bytes, wire_bytes);
  std::size_t requests = 0, landing = 0, outgoing = 0;
  for (const Exchange& e : schedule_.steps) {
    const std::size_t recv = std::min(e.recv.size(), schedule_.chunk), send = std::min(e.send.size(), schedule_.chunk);
    requests = std::max(requests, (e.from >= 0 ? cut.pieces(recv) : 0) + (e.to >= 0 ? cut.pieces(send) : 0));
    if (e.from >= 0 && (e.add || !wire_.lands_in_place())) landing = std::max(landing, recv * wire_bytes);
    if (e.to >= 0 && wire_.converts()) outgoing = std::max(outgoing, send * wire_bytes);
  }
  slot_requests_ = requests;
  slot_scratch_bytes_ = landing;
  slot_outgoing_bytes_ = outgoing;
  const std::size_t slots = schedule_.window;
  requests_.resize(slots * slot_requests_, MPI_REQUEST_NULL);
  scratch_.grow_to(slots * landing);
  outgoing_.grow_to(slots * outgoing);
}

ElementRange ScheduledAllreduce::chunk_of(ElementRange range, std::size_t i) const {
  const std::size_t skip = std::min((i % schedule_.chunks) * schedule_.chunk, range.size());
  const std::size_t size = std::min(range.size() - skip, schedule_.chunk);
  return {range.begin + skip, range.begin + skip + size};
}

void ScheduledAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  replan(count, type);
  data_ = data;
  oldest_ = 0;
  posted_ = 0;
  while (posted_ < std::min(schedule_.window, total_exchanges())) post(posted_++);
  wait_for(0);
}

void ScheduledAllreduce::post(std::size_t i) {
  const Exchange& e = schedule_.steps[i / schedule_.chunks];
  const std::size_t elem = dtype_size(planned_type_);
  const MPI_Datatype wire_type = wire_.mpi_element(planned_type_);
  const int tag = first_tag_ + e.kind->tag;
  const Segmenter cut(schedule_.segment_bytes, wire_.element_bytes(planned_type_));
  MPI_Request* requests = &requests_[slot(i) * slot_requests_];
  std::fill(requests, requests + slot_requests_, MPI_REQUEST_NULL);
  std::size_t posted = 0;
  if (e.from >= 0) {
    const ElementRange recv = chunk_of(e.recv, i);
    std::byte* values = data_ + recv.begin * elem;
    std::byte* landing = e.add || !wire_.lands_in_place() ? scratch_.data() + slot(i) * slot_scratch_bytes_ : values;
    cut.irecv(landing, recv.size(), wire_type, e.from, tag, comm_, requests, e.kind->irecv);
    posted = cut.pieces(recv.size());
  }
  if (e.to >= 0) {
    const ElementRange send = chunk_of(e.send, i);
    std::byte* outgoing = outgoing_.empty() ? nullptr : outgoing_.data() + slot(i) * slot_outgoing_bytes_;
    const void* message = wire_.pack(data_ + send.begin * elem, send.size(), planned_type_, outgoing);
    cut.isend(static_cast<const std::byte*>(message), send.size(), wire_type, e.to, tag, comm_, requests + posted,
              e.kind->isend);
  }
}

void ScheduledAllreduce::land(std::size_t i) {
  const Exchange& e = schedule_.steps[i / schedule_.chunks];
  if (e.from < 0) return;
  const ElementRange recv = chunk_of(e.recv, i);
  std::byte* values = data_ + recv.begin * dtype_size(planned_type_);
  const std::byte* landed = scratch_.data() + slot(i) * slot_scratch_bytes_;
  if (e.add)
    wire_.add(values, landed, recv.size(), planned_type_);
  else if (!wire_.lands_in_place())
    wire_.overwrite(values, landed, recv.size(), planned_type_);
  if (e.seal) wire_.seal(values, recv.size(), planned_type_);
}

void ScheduledAllreduce::wait_for(std::size_t i) {
  const Exchange& e = schedule_.steps[i / schedule_.chunks];
  stage_ = {{&requests_[slot(i) * slot_requests_], slot_requests_}, e.kind->waiting, e.from >= 0 ? e.from : e.to};
}

bool ScheduledAllreduce::advance() {
  land(oldest_);
  if (++oldest_ == total_exchanges()) return true;
  if (posted_ < total_exchanges()) post(posted_++);  // into the slot just freed
  wait_for(oldest_);
  return false;
}

}  // namespace gradsync
