#include "collectives/allreduce.hpp"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <utility>

#include "collectives/agreement.hpp"
#include "collectives/roll_call.hpp"
#include "collectives/watchdog.hpp"
#include "trace/recorder.hpp"

namespace gradsync {
namespace {

// What a wait in the agreement check is called in the watchdog's report.
constexpr const char* kAgreementStage = "agreement check before a collective";

// Objects are numbered in construction order; ranks build theirs collectively, so the numbers agree across ranks.
std::atomic<std::uint32_t> g_next_object{0};

}  // namespace

Allreduce::Allreduce(Comm comm, AllreduceOptions options)
    : comm_(std::move(comm)), options_(options), object_id_(g_next_object++), roll_call_tag_(comm_.reserve_tags(2)),
      agreement_tag_(roll_call_tag_ + 1) {}

// The operation's span starts when this rank enters the collective, before the agreement check, so that entry times
// compare across ranks (the slow-rank report). Its method, size and prediction are filled in when it ends.
void Allreduce::trace_begin(std::size_t count, Dtype type) {
  if (TraceRecorder* e = entry_recorder()) e->enter(object_id_, calls_);
  TraceRecorder* t = trace_recorder();
  if (!t) return;
  span_ = {};
  span_.kind = SpanKind::allreduce;
  span_.track = Track::communication;
  span_.bytes = count * dtype_size(type);
  span_.seq = calls_;
  span_.object = object_id_;
  span_.chunk = static_cast<std::uint32_t>(options_.chunk_bytes);
  span_.start_s = stage_started_s_ = trace_clock_s();
}

void Allreduce::trace_stage_done() {
  TraceRecorder* t = trace_recorder();
  if (!t || span_.start_s == 0) return;
  Span stage;
  stage.kind = SpanKind::stage;
  stage.track = Track::communication;
  stage.name = stage_.what;
  stage.peer = stage_.peer;
  stage.start_s = stage_started_s_;
  stage.end_s = stage_started_s_ = trace_clock_s();
  t->add(stage);
}

void Allreduce::trace_end() {
  TraceRecorder* t = trace_recorder();
  if (!t || span_.start_s == 0) return;
  span_.end_s = trace_clock_s();
  span_.name = traced_method();
  span_.predicted_s = static_cast<float>(predicted_seconds());
  t->add(span_);
  span_.start_s = 0;
}

// The options that shape the message pattern are part of the fingerprint: ranks that disagree on the chunk or
// segment size or the server layout (the method's own options) would exchange different numbers of messages and hang.
CallFingerprint Allreduce::fingerprint(std::size_t count, Dtype type) {
  if (plan_fingerprint_ == 0)
    plan_fingerprint_ =
        fingerprint_of_name(fmt::format("{}/{}/{}/{}/{}", name(), options_.chunk_bytes, options_.segment_bytes,
                                        options_.ring_window, options_.own.text()));
  return {plan_fingerprint_, count, static_cast<std::uint64_t>(type), calls_};
}

AllreduceOptions with_transport_defaults(AllreduceOptions o, bool shared_memory, bool chunked) {
  if (chunked && o.chunk_bytes == kAutoChunkBytes)
    o.chunk_bytes = shared_memory ? kSharedMemoryChunkBytes : kNetworkChunkBytes;
  if (chunked && o.ring_window == kAutoRingWindow)
    o.ring_window = shared_memory ? kSharedMemoryRingWindow : kNetworkRingWindow;
#ifdef GRADSYNC_SIMULATED
  // SimGrid's flow model charges a message its size over the link however it is cut, so segments change no simulated
  // time, while every one is an event to simulate: 64 ranks of rd and the ring at 16 MiB took minutes with 32 KiB
  // pieces and seconds whole. --segment-bytes still cuts them where asked.
  if (o.segment_bytes == kAutoSegmentBytes) o.segment_bytes = kWholeMessages;
#else
  if (o.segment_bytes == kAutoSegmentBytes) o.segment_bytes = shared_memory ? kWholeMessages : kNetworkSegmentBytes;
#endif
  return o;
}

void Allreduce::run(void* data, std::size_t count, Dtype type) {
  if (in_flight()) throw std::logic_error(fmt::format("{}: run() while a started operation is in flight", name()));
  trace_begin(count, type);
  seq_ = calls_;
  if (options_.check_agreement && comm_.size() > 1 && !watchdog_armed()) {
    check_agreement(comm_, name(), fingerprint(count, type));
  } else if (options_.check_agreement && comm_.size() > 1) {  // polled, so that a hang here takes a roll call too
    agreement_.start(comm_, fingerprint(count, type), agreement_tag_);
    stage_ = {agreement_.requests(), kAgreementStage};
    {
      const CollectiveScope collective(name().data(), object_id_, seq_);
      const WaitScope wait(stage_.what);
      do wait_for_stage();
      while (!agreement_.advance(comm_));
    }
    agreement_.verify(comm_, name());
  }
  ++calls_;
  require_supported(type);  // before the shortcuts below: a wrong type fails the same way on any communicator
  if (span_.start_s != 0) stage_started_s_ = trace_clock_s();  // the first stage starts after the check
  if (count > 0 && comm_.size() > 1) reduce(static_cast<std::byte*>(data), count, type);
  if (span_.start_s == 0) return;
  Span waited = span_;  // the caller blocked for the whole operation
  waited.kind = SpanKind::wait;
  waited.track = Track::compute;
  waited.name = "wait (blocking allreduce)";
  trace_end();
  waited.end_s = trace_clock_s();
  if (TraceRecorder* t = trace_recorder()) t->add(waited);
}

void Allreduce::reduce(std::byte* data, std::size_t count, Dtype type) {
  begin(data, count, type);
  phase_ = Phase::moving;
  drive_to_completion();
  phase_ = Phase::idle;
}

void Allreduce::start(void* data, std::size_t count, Dtype type) { start_operation(data, count, type, false); }

void Allreduce::start_held(void* data, std::size_t count, Dtype type) { start_operation(data, count, type, true); }

void Allreduce::start_operation(void* data, std::size_t count, Dtype type, bool held) {
  if (in_flight()) throw std::logic_error(fmt::format("{}: start() while an operation is in flight", name()));
  held_ = held;
  data_ = static_cast<std::byte*>(data);
  count_ = count;
  type_ = type;
  seq_ = calls_;
  trace_begin(count, type);
  if (options_.check_agreement && comm_.size() > 1) {
    agreement_.start(comm_, fingerprint(count, type), agreement_tag_);
    stage_ = {agreement_.requests(), kAgreementStage};
    phase_ = Phase::checking;
    return;
  }
  if (held_)
    phase_ = Phase::checked;
  else
    begin_moving();
}

void Allreduce::release() {
  if (!held_ || !in_flight()) throw std::logic_error(fmt::format("{}: release() without start_held()", name()));
  held_ = false;
  if (span_.start_s != 0) span_.start_s = stage_started_s_ = trace_clock_s();
  if (phase_ == Phase::checked) begin_moving();
}

void Allreduce::begin_moving() {
  ++calls_;
  phase_ = Phase::idle;  // a type this method cannot sum leaves the object usable
  require_supported(type_);
  if (count_ == 0 || comm_.size() == 1) {
    phase_ = Phase::done;
    trace_end();
    return;
  }
  phase_ = Phase::moving;
  begin(data_, count_, type_);
}

void Allreduce::step_forward() {
  if (!held_) trace_stage_done();
  if (phase_ == Phase::checking) {
    if (!agreement_.advance(comm_)) return;  // its next round is posted: stage_ still names its requests
    phase_ = Phase::idle;                    // a mismatch leaves the object usable
    const bool held = std::exchange(held_, false);
    agreement_.verify(comm_, name());
    held_ = held;
    if (held_)
      phase_ = Phase::checked;
    else
      begin_moving();
  } else if (advance()) {
    phase_ = Phase::done;
    trace_end();
  }
}

bool Allreduce::test() {
  while (in_flight() && phase_ != Phase::checked) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(stage_.requests.size()), stage_.requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall", comm_.rank());
    if (!done) return false;
    step_forward();
  }
  return phase_ == Phase::done;
}

void Allreduce::wait() {
  if (phase_ == Phase::idle) throw std::logic_error(fmt::format("{}: wait() with no operation started", name()));
  if (held_) throw std::logic_error(fmt::format("{}: wait() on an operation held by start_held()", name()));
  drive_to_completion();
}

void Allreduce::drive_to_completion() {
  const CollectiveScope collective(traced_method(), object_id_, seq_);
  while (in_flight()) {
    {
      const WaitScope wait(stage_.what, -1, stage_.peer);
      wait_for_stage();
    }
    step_forward();
  }
}

void Allreduce::wait_for_stage() {
  const int n = static_cast<int>(stage_.requests.size());
  if (!watchdog_armed()) {
    check_mpi(MPI_Waitall(n, stage_.requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall", comm_.rank());
    return;
  }
  std::unique_ptr<RollCall> roll_call;  // allocated only when a wait has grown suspiciously long
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(n, stage_.requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall", comm_.rank());
    if (done) return;
    if (!roll_call && watchdog_wants_roll_call()) {
      const TraceRecorder* t = entry_recorder();
      roll_call = std::make_unique<RollCall>(comm_, roll_call_tag_, object_id_, seq_, t != nullptr,
                                             t ? t->recent_entries(kRollCallEntries) : std::vector<CollectiveEntry>{});
      set_roll_call_result(roll_call->findings());
    }
    if (roll_call && roll_call->poll()) set_roll_call_result(roll_call->findings());
  }
}

bool Allreduce::contributes(int) const { return true; }

ElementRange Allreduce::result_range(int, std::size_t count) const { return {0, count}; }

}  // namespace gradsync
