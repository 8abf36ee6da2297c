#pragma once
// A span from a scope's opening to its closing, recorded when a trace recorder is installed (trace/recorder.hpp).
// Without one it costs a pointer test on each side: no clock read, nothing stored.
#include "trace/recorder.hpp"

namespace gradsync {

class TraceScope {
 public:
  // `name` must live as long as the process (a literal); `layer` for forward/backward spans.
  TraceScope(SpanKind kind, const char* name, int layer = -1, int peer = -1) : recorder_(trace_recorder()) {
    if (!recorder_) return;
    span_.kind = kind;
    span_.name = name;
    span_.layer = static_cast<std::int16_t>(layer);
    span_.peer = peer;
    span_.start_s = trace_clock_s();
  }
  ~TraceScope() {
    if (!recorder_) return;
    span_.end_s = trace_clock_s();
    recorder_->add(span_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceRecorder* recorder_;
  Span span_;
};

}  // namespace gradsync
