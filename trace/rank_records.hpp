#pragma once
// One rank's records in a form that can cross process boundaries: a span's name is a pointer only inside its own
// process, so encode() sends a table of the distinct names and each span's index into it, and decode() points the
// spans at the decoded table. Used by the gather step (collectives/trace_gather.hpp); no MPI here.
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "trace/span.hpp"

namespace gradsync {

struct RankRecords {
  RankRecords() = default;
  // Moves only: a copy's spans would point into the original's names.
  RankRecords(RankRecords&&) = default;
  RankRecords& operator=(RankRecords&&) = default;
  RankRecords(const RankRecords&) = delete;
  RankRecords& operator=(const RankRecords&) = delete;

  std::deque<std::string> names;  // what the spans' names point into (a deque: it never moves its strings)
  std::vector<Span> spans;
  std::vector<CollectiveEntry> entries;
};

// `spans` and `entries` as bytes (native byte order: every rank of a job runs the same binary on the same kind of
// host).
std::string encode_records(const std::vector<Span>& spans, const std::vector<CollectiveEntry>& entries);
// The inverse of encode_records. Throws std::runtime_error on bytes that encode_records did not produce.
RankRecords decode_records(std::string_view bytes);

}  // namespace gradsync
