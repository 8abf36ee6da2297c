// Tracing: the recorder's window and rings, the records' trip between processes, the slow-rank verdict, the spans the
// collectives record (their bytes against the traffic layer's count) and auto's explanation log.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "collectives/auto_allreduce.hpp"
#include "collectives/auto_explain.hpp"
#include "collectives/methods.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"
#include "trace/rank_records.hpp"
#include "trace/recorder.hpp"
#include "trace/slow_rank.hpp"

using namespace gradsync;

namespace {

// Installs `recorder` for the scope's length.
struct Installed {
  explicit Installed(TraceRecorder& r) { install_trace_recorder(&r); }
  ~Installed() { install_trace_recorder(nullptr); }
};

Span span_at(double start, double end, const char* name = "x") {
  Span s;
  s.start_s = start;
  s.end_s = end;
  s.name = name;
  return s;
}

std::vector<Span> allreduce_spans(const TraceRecorder& r) {
  std::vector<Span> out;
  for (const Span& s : r.spans())
    if (s.kind == SpanKind::allreduce) out.push_back(s);
  return out;
}

}  // namespace

TEST_CASE("trace: an A:B window keeps exactly its steps") {
  TraceRecorder r({.first = 3, .last = 5});
  for (int step = 0; step < 10; ++step) {
    r.set_step(step);
    r.add(span_at(step, step + 0.5));
  }
  std::set<std::int64_t> kept;
  for (const Span& s : r.spans()) kept.insert(s.step);
  CHECK(kept == std::set<std::int64_t>{3, 4, 5});
}

TEST_CASE("trace: the default window keeps the last N steps, whole") {
  TraceRecorder r({.last_steps = 4});
  for (int step = 0; step < 50; ++step) {
    r.set_step(step);
    for (int i = 0; i < 3; ++i) r.add(span_at(step + i * 0.1, step + i * 0.1 + 0.05));
  }
  const std::vector<Span> spans = r.spans();
  REQUIRE(spans.size() == 12);
  CHECK(spans.front().step == 46);
  CHECK(spans.back().step == 49);
}

TEST_CASE("trace: records survive encoding with their names") {
  std::vector<Span> spans = {span_at(1, 2, "forward"), span_at(2, 3, "ring"), span_at(3, 4, "forward")};
  spans[1].bytes = 4096;
  spans[1].kind = SpanKind::allreduce;
  const std::vector<CollectiveEntry> entries = {{1.5, 7, 2}};
  const RankRecords back = decode_records(encode_records(spans, entries));
  REQUIRE(back.spans.size() == 3);
  CHECK(std::string(back.spans[0].name) == "forward");
  CHECK(std::string(back.spans[1].name) == "ring");
  CHECK(back.spans[1].bytes == 4096);
  CHECK(back.spans[2].end_s == 4);
  REQUIRE(back.entries.size() == 1);
  CHECK(back.entries[0].seq == 7);
  CHECK_THROWS(decode_records(encode_records(spans, entries).substr(5)));
}

TEST_CASE("trace: the slow-rank report names a consistently late rank and nobody otherwise") {
  GatheredTrace t;
  t.ranks.resize(4);
  t.start.resize(4);
  const int late = 2;
  for (int call = 0; call < 40; ++call)
    for (int r = 0; r < 4; ++r) {
      // Rank `late` arrives 5 ms after the others in 39 of 40 calls; the others' order rotates.
      const double at = call + 1e-5 * ((r + call) % 4) + (r == late && call != 0 ? 5e-3 : 0);
      t.ranks[static_cast<std::size_t>(r)].entries.push_back({at, static_cast<std::uint64_t>(call), 0});
    }
  const SlowRankReport named = find_slow_rank(t);
  CHECK(named.collectives == 40);
  CHECK(named.named == late);
  CHECK(format_slow_rank_report(named).find("rank 2 was last into 98% of allreduces, 5.0 ms late") != std::string::npos);

  for (auto& rank : t.ranks)
    for (auto& e : rank.entries) e.at_s = static_cast<double>(e.seq) + 1e-5 * static_cast<double>(&rank - &t.ranks[0]);
  const SlowRankReport none = find_slow_rank(t);  // rank 3 is always last, by 10 us: below the lateness threshold
  CHECK(none.named == -1);
}

TEST_CASE("trace: a hang's lateness comes from the ranks that answered and names those it has no data for") {
  std::vector<std::optional<std::vector<CollectiveEntry>>> heard(4);
  for (int r : {0, 1}) {  // rank 1 is 5 ms late into each of 30 calls; rank 2 answered without entries; 3 never did
    std::vector<CollectiveEntry>& entries = heard[static_cast<std::size_t>(r)].emplace();
    for (int call = 0; call < 30; ++call)
      entries.push_back({call + (r == 1 ? 5e-3 : 0.0), static_cast<std::uint64_t>(call), 0});
  }
  heard[2].emplace();
  const std::string text = format_hang_lateness(heard);
  CHECK(text.find("no data for ranks: 2 (recorded none) 3\n") != std::string::npos);
  CHECK(text.find("rank 1 was last into 100% of allreduces, 5.0 ms late") != std::string::npos);
  CHECK(text.find("  rank 3:") == std::string::npos);
}

TEST_CASE("trace: the recent entries a roll call sends are the newest, on rank 0's clock") {
  TraceRecorder r({});
  r.set_clock_offset(2.0);
  for (std::uint64_t call = 0; call < kCollectiveEntries + 10; ++call) r.enter(0, call);
  const std::vector<CollectiveEntry> recent = r.recent_entries(3);
  REQUIRE(recent.size() == 3);
  CHECK(recent[0].seq == kCollectiveEntries + 7);
  CHECK(recent[2].seq == kCollectiveEntries + 9);
  CHECK(recent[2].at_s <= trace_clock_s() - 2.0);
  CHECK(recent[2].at_s > trace_clock_s() - 2.0 - 60);
  TraceRecorder fresh({});
  fresh.enter(1, 4);
  CHECK(fresh.recent_entries(3).size() == 1);
}

TEST_CASE("trace: the slow-rank report alone records collective entries and no span") {
  // What every run installs by default (ObserveOptions without --trace): entries for the report, no span ring.
  const Comm world = Comm::world();
  TraceRecorder recorder({}, /*spans=*/false);
  const Installed installed(recorder);
  CHECK(trace_recorder() == nullptr);  // the span sites see no recorder: no clock read, nothing stored
  CHECK(entry_recorder() == &recorder);
  const std::unique_ptr<Allreduce> a = make_allreduce("ring", world);
  std::vector<float> data(257, 1.0f);
  a->run(std::span(data));
  a->run(std::span(data));
  const std::vector<CollectiveEntry> entries = recorder.entries();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].object == a->object_id());
  CHECK(entries[1].seq == entries[0].seq + 1);
  CHECK(recorder.spans().empty());
}

TEST_CASE("trace: each allreduce span carries the bytes the traffic layer sees moved") {
  const Comm world = Comm::world();
  const int p = world.size();
  TraceRecorder recorder({});
  const Installed installed(recorder);
  for (const char* method : {"ring", "mpi"}) {
    CAPTURE(method);
    const std::unique_ptr<Allreduce> a = make_allreduce(method, world);
    std::vector<float> data(1000 + 37, 1.0f);
    std::size_t sent = 0, collective_bytes = 0;
    {
      traffic::Recording rec;
      a->run(std::span(data));
      sent = rec.bytes_sent();
      for (const traffic::Collective& c : rec.collectives)
        if (c.bytes != 8 * sizeof(std::int64_t)) collective_bytes += c.bytes;  // not the agreement check
    }
    const std::vector<Span> spans = allreduce_spans(recorder);
    REQUIRE(!spans.empty());
    const Span& s = spans.back();
    CHECK(std::string(s.name) == method);
    CHECK(s.object == a->object_id());
    CHECK(s.bytes == data.size() * sizeof(float));
    CHECK(s.end_s >= s.start_s);
    if (std::string(method) == "mpi") {
      CHECK(collective_bytes == (p > 1 ? s.bytes : 0));
    } else {
      // Over all ranks, a ring sends every element 2(P-1) times: P-1 in the reduce-scatter, P-1 in the all-gather.
      CHECK(world.sum(static_cast<std::int64_t>(sent)) == static_cast<std::int64_t>(2 * (p - 1) * s.bytes));
    }
  }
}

TEST_CASE("trace: auto's explanation log holds exactly the sizes it reduced") {
  const Comm world = Comm::world();
  const std::unique_ptr<Allreduce> a = make_allreduce("auto", world);
  const std::vector<std::size_t> counts = {100, 5000, 100, 70000, 5000, 100};
  for (std::size_t n : counts) {
    std::vector<float> data(n, 1.0f);
    a->run(std::span(data));
  }
  std::set<std::size_t> logged;
  for (const AutoChoice& c : auto_choices()) {
    if (c.object != a->object_id()) continue;
    CAPTURE(c.bytes);
    CHECK(logged.insert(c.bytes).second);  // one entry per size
    const auto expected_calls = std::count(counts.begin(), counts.end(), c.bytes / sizeof(float));
    CHECK(c.calls == static_cast<std::size_t>(world.size() > 1 ? expected_calls : 0));
    CHECK(c.chosen == dynamic_cast<AutoAllreduce&>(*a).choice(c.bytes / sizeof(float), Dtype::f32));
    CHECK(!c.predicted_s.empty());
  }
  // A single rank reduces nothing (auto never chooses): the log stays empty.
  CHECK(logged == (world.size() > 1 ? std::set<std::size_t>{400, 20000, 280000} : std::set<std::size_t>{}));
}
