#pragma once
// The Chrome trace event format (the "traceEvents" JSON that Perfetto and chrome://tracing open): one process per
// rank, one thread per track (compute, communication), complete events ("ph":"X") with ts and dur in microseconds
// from the earliest span, on rank 0's clock. The clock offsets and their error bounds go in "otherData".
#include <string>

#include "trace/gathered_trace.hpp"

namespace gradsync {

// Writes `trace` to `path`. Throws std::runtime_error naming the path if it cannot be written.
void write_chrome_trace(const std::string& path, const GatheredTrace& trace);

}  // namespace gradsync
