#pragma once
// One timed span of a run, as the trace recorder (trace/recorder.hpp) stores it: fixed-size plain data, so that
// recording is a copy into a preallocated ring and everything else (names, JSON, the slow-rank report) happens after
// the run. Times are seconds on the recorder's clock (trace_clock_s), local to the process until aligned.
#include <cstdint>

namespace gradsync {

enum class SpanKind : std::uint8_t {
  forward,       // one layer's forward pass (layer)
  backward,      // one layer's backward pass (layer)
  allreduce,     // one collective from its start to its completion (bytes, seq, object, chunk, method in name)
  stage,         // one stage of a collective: the messages it waited for (peer)
  wait,          // the worker blocked on communication
  push_pull,     // parameter server: a worker's push of its gradient and pull of the parameters (peer: the server)
  server_apply,  // parameter server: the server summing and applying gradients
  checkpoint,    // writing a checkpoint set
  evaluation,    // evaluating the model on the test set
  step,          // one training step on a worker (compute and sync)
};

// Which row of a rank a span is drawn on. Compute and waits on the worker's own thread; collectives on a track of
// their own, so that spans on one track always nest or follow each other even when communication overlaps compute.
enum class Track : std::uint8_t { compute = 0, communication = 1 };

struct Span {
  double start_s = 0;
  double end_s = 0;
  const char* name = "";     // a string that lives as long as the process (a literal, a method's name)
  std::int64_t step = -1;    // the global training step it belongs to (-1: outside the steps)
  std::uint64_t bytes = 0;   // collectives: the buffer's size
  std::uint64_t seq = 0;     // collectives: the call's number on its object, the same on every rank
  std::uint32_t object = 0;  // collectives: which object, the same on every rank (built in the same order)
  std::uint32_t chunk = 0;   // collectives: the largest message (0: none)
  float predicted_s = 0;     // auto: the fastest candidate's predicted time (0: none)
  std::int32_t peer = -1;    // the one rank a stage or push waits for (-1: several or none)
  std::int16_t layer = -1;   // forward/backward: the layer
  SpanKind kind = SpanKind::step;
  Track track = Track::compute;
};

// When a rank entered a collective: the slow-rank report's input, kept apart from spans so that it covers many more
// calls than the span window.
struct CollectiveEntry {
  double at_s = 0;
  std::uint64_t seq = 0;
  std::uint32_t object = 0;
};

const char* span_kind_name(SpanKind kind);

}  // namespace gradsync
