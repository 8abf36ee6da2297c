#include "trace/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>

namespace gradsync {
namespace {

std::string escaped(const char* text) {
  std::string out;
  for (const char* c = text; *c; ++c) {
    if (*c == '"' || *c == '\\') out += '\\';
    if (static_cast<unsigned char>(*c) >= 0x20) out += *c;
  }
  return out;
}

// What the args of a span say, by kind: only the fields that kind fills.
std::string span_args(const Span& s) {
  std::string args = fmt::format("\"step\":{}", s.step);
  if (s.kind == SpanKind::forward || s.kind == SpanKind::backward) args += fmt::format(",\"layer\":{}", s.layer);
  if (s.kind == SpanKind::allreduce) {
    args += fmt::format(",\"method\":\"{}\",\"bytes\":{},\"seq\":{},\"object\":{},\"chunk\":{}", escaped(s.name), s.bytes,
                        s.seq, s.object, s.chunk);
    if (s.predicted_s > 0)
      args += fmt::format(",\"predicted_us\":{:.3f},\"regret\":{:.3f}", s.predicted_s * 1e6,
                          (s.end_s - s.start_s) / s.predicted_s);
  }
  if (s.peer >= 0) args += fmt::format(",\"peer\":{}", s.peer);
  return args;
}

std::string event_name(const Span& s) {
  if (s.kind == SpanKind::forward || s.kind == SpanKind::backward)
    return fmt::format("{} {}", span_kind_name(s.kind), s.layer);
  if (s.kind == SpanKind::allreduce) return fmt::format("allreduce {}", escaped(s.name));
  return escaped(s.name);
}

void write_metadata(std::FILE* f, const GatheredTrace& t) {
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    fmt::print(f, "{}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"rank {}\"}}}}",
               r ? ",\n" : "", r, r);
    fmt::print(f, ",\n{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", r, r);
    fmt::print(f, ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"compute\"}}}}",
               r);
    fmt::print(f, ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":1,\"args\":{{\"name\":\"{}\"}}}}", r,
               t.communication_thread ? "communication thread" : "communication (progressed between kernels)");
  }
}

void write_other_data(std::FILE* f, const GatheredTrace& t) {
  fmt::print(f, "\"otherData\":{{\"clock\":\"{}, aligned to rank 0 by ping-pong\",\"window_steps\":{},",
             trace_clock_name(), t.window.steps());
  fmt::print(f, "\"clock_offsets\":[");
  for (std::size_t r = 0; r < t.start.size(); ++r)
    fmt::print(
        f, "{}{{\"rank\":{},\"offset_us\":{:.3f},\"error_us\":{:.3f},\"end_offset_us\":{:.3f},\"end_error_us\":{:.3f}}}",
        r ? "," : "", r, t.start[r].offset_s * 1e6, t.start[r].error_s * 1e6, t.end[r].offset_s * 1e6,
        t.end[r].error_s * 1e6);
  fmt::print(f, "]}}");
}

}  // namespace

void write_chrome_trace(const std::string& path, const GatheredTrace& t) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "w"), std::fclose);
  if (!file) throw std::runtime_error(fmt::format("--trace {}: cannot open for writing: {}", path, std::strerror(errno)));
  std::FILE* f = file.get();
  double origin = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < t.ranks.size(); ++r)
    for (const Span& s : t.ranks[r].spans) origin = std::min(origin, t.aligned(static_cast<int>(r), s.start_s));
  fmt::print(f, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  write_metadata(f, t);
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const Span& s : t.ranks[r].spans) {
      const double ts = (t.aligned(static_cast<int>(r), s.start_s) - origin) * 1e6;
      fmt::print(f,
                 ",\n{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},"
                 "\"args\":{{{}}}}}",
                 event_name(s), span_kind_name(s.kind), r, static_cast<int>(s.track), ts, (s.end_s - s.start_s) * 1e6,
                 span_args(s));
    }
  }
  fmt::print(f, "\n],\n");
  write_other_data(f, t);
  fmt::print(f, "}}\n");
  if (std::ferror(f)) throw std::runtime_error(fmt::format("--trace {}: write failed", path));
}

}  // namespace gradsync
