#include "trainers/loop/run_trace.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "collectives/trace_gather.hpp"
#include "collectives/watchdog.hpp"
#include "trace/chrome_trace.hpp"
#include "trace/slow_rank.hpp"

namespace gradsync {
namespace {

std::string clock_lines(const GatheredTrace& t) {
  std::string out = fmt::format(
      "trace: clock offsets to rank 0 ({}, ping-pong; error bound = half the shortest round trip)\n", trace_clock_name());
  for (std::size_t r = 1; r < t.start.size(); ++r)
    out += fmt::format("  rank {}: start {:+.1f} us +- {:.1f} us, end {:+.1f} us +- {:.1f} us (drift {:+.1f} us)\n", r,
                       t.start[r].offset_s * 1e6, t.start[r].error_s * 1e6, t.end[r].offset_s * 1e6,
                       t.end[r].error_s * 1e6, (t.end[r].offset_s - t.start[r].offset_s) * 1e6);
  return out;
}

}  // namespace

std::string check_trace_file(const ObserveOptions& options, const Comm& world) {
  if (options.trace_file.empty()) return {};
  std::string problem;
  if (world.rank() == 0) {
    std::FILE* f = std::fopen(options.trace_file.c_str(), "w");
    if (!f) problem = fmt::format("--trace {}: cannot open for writing: {}", options.trace_file, std::strerror(errno));
    if (f) std::fclose(f);
  }
  world.broadcast_string(problem, 0);
  return problem;
}

RunTrace::RunTrace(const ObserveOptions& options, const Comm& world, bool communication_thread)
    : options_(options), world_(world) {
  if (!options_.recording()) return;
  gathered_.window = options_.window;
  gathered_.communication_thread = communication_thread ? 1 : 0;
  recorder_ = std::make_unique<TraceRecorder>(options_.window, options_.spans());
  const WaitScope wait("clock ping-pongs with rank 0 (--trace, the slow-rank report)");
  gathered_.start = measure_clock_offsets(world_);
  recorder_->set_clock_offset(gathered_.start[static_cast<std::size_t>(world_.rank())].offset_s);
  install_trace_recorder(recorder_.get());
}

RunTrace::~RunTrace() {
  if (entry_recorder() == recorder_.get()) install_trace_recorder(nullptr);
}

void RunTrace::finish() {
  if (!recorder_) return;
  install_trace_recorder(nullptr);  // the ping-pongs and the gather are not part of the run
  {
    const WaitScope wait("clock ping-pongs and the gather of trace records on rank 0 (--trace, the slow-rank report)");
    gathered_.end = measure_clock_offsets(world_);
    gathered_.ranks = gather_records(world_, *recorder_);
  }
  if (world_.rank() != 0) return;
  const SlowRankReport report = find_slow_rank(gathered_);
  if (options_.table()) {
    fmt::print("{}", clock_lines(gathered_));
    fmt::print("{}", format_slow_rank_report(report));
  } else if (options_.slow_ranks == SlowRanks::verdict && report.named >= 0) {
    fmt::print("{}", format_slow_rank_verdict(report));  // one line, and only when a rank was consistently late
  }
  if (!options_.trace_file.empty()) {
    write_chrome_trace(options_.trace_file, gathered_);
    fmt::print("trace: {} (Chrome trace JSON: open in https://ui.perfetto.dev or chrome://tracing)\n",
               options_.trace_file);
  }
  std::fflush(stdout);
}

}  // namespace gradsync
