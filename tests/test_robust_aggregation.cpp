// The robust aggregators (collectives/robust/): the spec parser and refusals, every aggregator in both forms against
// a float64 reference computed from every rank's whole vector, at P = 1 .. the run's ranks (sub-communicators), the
// same bits on every rank, and the traffic of the segmented form against the gather-to-one baseline.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "collectives/robust/robust_aggregation.hpp"
#include "model/rng.hpp"
#include "test_support.hpp"
#include "tests/traffic/traffic.hpp"

using namespace gradsync;
using test::check_mentions;

namespace {

using Vectors = std::vector<std::vector<double>>;  // n whole vectors

double median_sorted(const std::vector<double>& v) {
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

std::vector<double> mean_of(const Vectors& x, const std::vector<int>& chosen) {
  std::vector<double> out(x[0].size(), 0.0);
  for (std::size_t j = 0; j < out.size(); ++j) {
    for (int i : chosen) out[j] += x[static_cast<std::size_t>(i)][j];
    out[j] /= static_cast<double>(chosen.size());
  }
  return out;
}

// Krum's score of i among `among`: its n' - f - 2 smallest squared distances to the others (clamped at 0).
double score(const Vectors& x, const std::vector<int>& among, int i, int f) {
  std::vector<double> d;
  for (int k : among) {
    if (k == i) continue;
    double s = 0;
    for (std::size_t j = 0; j < x[0].size(); ++j)
      s += std::pow(x[static_cast<std::size_t>(i)][j] - x[static_cast<std::size_t>(k)][j], 2);
    d.push_back(s);
  }
  std::sort(d.begin(), d.end());
  const int keep = std::clamp(static_cast<int>(among.size()) - f - 2, 0, static_cast<int>(d.size()));
  return std::accumulate(d.begin(), d.begin() + keep, 0.0);
}

// Ranks of `among` in increasing (score, rank) order.
std::vector<int> by_score(const Vectors& x, std::vector<int> among, int f) {
  std::vector<double> s(x.size());
  for (int i : among) s[static_cast<std::size_t>(i)] = score(x, among, i, f);
  std::stable_sort(among.begin(), among.end(),
                   [&](int a, int b) { return s[static_cast<std::size_t>(a)] < s[static_cast<std::size_t>(b)]; });
  return among;
}

// The aggregate by the definitions, in float64. `ref` is cclip's reference.
std::vector<double> reference(const AggregatorSpec& spec, const Vectors& x, const std::vector<double>& ref) {
  const int n = static_cast<int>(x.size());
  const std::size_t len = x[0].size();
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::vector<double> out(len);
  const auto column = [&](std::size_t j, const std::vector<int>& rows) {
    std::vector<double> c;
    for (int i : rows) c.push_back(x[static_cast<std::size_t>(i)][j]);
    std::sort(c.begin(), c.end());
    return c;
  };
  switch (spec.kind) {
    case AggregatorKind::mean: return mean_of(x, all);
    case AggregatorKind::median:
      for (std::size_t j = 0; j < len; ++j) out[j] = median_sorted(column(j, all));
      return out;
    case AggregatorKind::trimmed:
      for (std::size_t j = 0; j < len; ++j) {
        const std::vector<double> c = column(j, all);
        out[j] = std::accumulate(c.begin() + spec.f, c.end() - spec.f, 0.0) / (n - 2 * spec.f);
      }
      return out;
    case AggregatorKind::krum: return x[static_cast<std::size_t>(by_score(x, all, spec.f)[0])];
    case AggregatorKind::multikrum: {
      std::vector<int> chosen = by_score(x, all, spec.f);
      chosen.resize(static_cast<std::size_t>(spec.m));
      return mean_of(x, chosen);
    }
    case AggregatorKind::bulyan: {
      std::vector<int> left = all, chosen;
      for (int t = 0; t < n - 2 * spec.f; ++t) {
        const int pick = by_score(x, left, spec.f)[0];
        chosen.push_back(pick);
        left.erase(std::find(left.begin(), left.end(), pick));
      }
      const int beta = n - 4 * spec.f;
      for (std::size_t j = 0; j < len; ++j) {
        std::vector<double> c = column(j, chosen);
        const double med = median_sorted(c);
        std::stable_sort(c.begin(), c.end(), [&](double a, double b) { return std::abs(a - med) < std::abs(b - med); });
        out[j] = std::accumulate(c.begin(), c.begin() + beta, 0.0) / beta;
      }
      return out;
    }
    case AggregatorKind::cclip: {
      std::vector<double> v = ref;
      for (int step = 0; step < spec.iterations; ++step) {
        std::vector<double> w(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) {
          double s = 0;
          for (std::size_t j = 0; j < len; ++j) s += std::pow(x[static_cast<std::size_t>(i)][j] - v[j], 2);
          w[static_cast<std::size_t>(i)] = std::min(1.0, spec.tau / std::sqrt(s));
        }
        for (std::size_t j = 0; j < len; ++j) {
          double s = 0;
          for (int i = 0; i < n; ++i) s += (x[static_cast<std::size_t>(i)][j] - v[j]) * w[static_cast<std::size_t>(i)];
          v[j] += s / n;
        }
      }
      return v;
    }
  }
  return out;
}

// Rank `rank`'s input: uniform in [-1, 1), or (ties) drawn from four values with ranks paired into identical vectors.
std::vector<float> input_of(int rank, std::size_t count, int call, bool ties) {
  Rng rng(ties ? 7 + static_cast<std::uint64_t>(rank / 2) : 11 + static_cast<std::uint64_t>(rank), count * 16 + call);
  std::vector<float> v(count);
  const float pool[] = {-1.0f, 0.0f, 0.5f, 1.0f};
  for (float& x : v) x = ties ? pool[rng.below(4)] : 2 * rng.uniform() - 1;
  return v;
}

// The specs to try at P ranks: each parameter at 0 and at its limit.
std::vector<std::string> specs_for(int p) {
  std::vector<std::string> s = {"mean",      "median",    "trimmed:0",  "trimmed:" + std::to_string((p - 1) / 2),
                                "cclip:0.5", "cclip:100", "cclip:0.3,3"};
  if (p >= 3) {
    const int fk = (p - 3) / 2, fb = (p - 3) / 4;
    for (const std::string& k :
         std::vector<std::string>{"krum:0", "krum:" + std::to_string(fk), "bulyan:0", "bulyan:" + std::to_string(fb),
                                  "multikrum:" + std::to_string(fk) + ",1", "multikrum:" + std::to_string(fk)})
      s.push_back(k);
  }
  return s;
}

// Runs `spec` in `form` on `comm` for two calls (the second clips around the first for cclip) and checks each
// against the reference and across ranks.
void check_aggregator(const Comm& comm, const std::string& text, AggregationForm form, std::size_t count, bool ties) {
  const int p = comm.size();
  auto agg = make_robust_aggregation(comm, text, 0, form);
  std::vector<double> ref(count, 0.0);
  for (int call = 0; call < 2; ++call) {
    std::vector<float> mine = input_of(comm.rank(), count, call, ties);
    const std::vector<float> everyone = comm.all_gather(mine);
    Vectors x(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
      x[static_cast<std::size_t>(r)].assign(everyone.begin() + static_cast<std::ptrdiff_t>(r * count),
                                            everyone.begin() + static_cast<std::ptrdiff_t>((r + 1) * count));
    const std::vector<double> expect = reference(agg->spec(), x, ref);
    agg->run(std::span<float>(mine));
    int bad = 0;
    for (std::size_t j = 0; j < count; ++j) bad += std::abs(mine[j] - expect[j]) > 1e-6 * (1 + std::abs(expect[j]));
    const std::vector<float> outs = comm.all_gather(mine);
    const bool same = std::memcmp(outs.data(), outs.data() + static_cast<std::ptrdiff_t>(comm.rank() * count),
                                  count * sizeof(float)) == 0;
    INFO(text, " P=", p, " count=", count, " ties=", ties, " call=", call,
         std::string(form == AggregationForm::gathered ? " gathered" : " segmented"));
    CHECK(bad == 0);
    CHECK(same);
    for (std::size_t j = 0; j < count; ++j) ref[j] = mine[j];
  }
}

}  // namespace

TEST_CASE("robust aggregator specs parse, and bad ones are refused naming the text") {
  const AggregatorSpec mk = parse_aggregator("multikrum:2,4", 0);
  CHECK(mk.kind == AggregatorKind::multikrum);
  CHECK(mk.f == 2);
  CHECK(mk.m == 4);
  CHECK(parse_aggregator("krum", 3).f == 3);  // F from the run's Byzantine count
  CHECK(parse_aggregator("trimmed:1", 3).f == 1);
  const AggregatorSpec cc = parse_aggregator("cclip:1.5,2", 0);
  CHECK(cc.tau == 1.5);
  CHECK(cc.iterations == 2);
  CHECK(resolved_for(parse_aggregator("multikrum:1", 0), 5).m == 4);  // M = n - F when left out
  const auto refused = [](const std::string& text, std::initializer_list<std::string> parts) {
    std::string message;
    try {
      parse_aggregator(text, 0);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    INFO(text);
    check_mentions(message, parts);
  };
  refused("krumm:1", {"krumm", "multikrum:F,M", "bulyan:F"});
  refused("krum:x", {"krum:x", "'x'"});
  refused("krum:-1", {"krum:-1", "'-1'"});
  refused("median:3", {"median:3", "no parameter"});
  refused("cclip", {"cclip", "TAU"});
  refused("cclip:0", {"cclip:0", "'0'"});
  refused("multikrum:1,0", {"multikrum:1,0", "M"});
  refused("trimmed:1,2", {"trimmed:1,2", "at most 1"});
}

TEST_CASE("robust aggregators too large for the rank count are refused with the rule and the numbers") {
  const auto refused = [](const std::string& text, int n, std::initializer_list<std::string> parts) {
    std::string message;
    try {
      resolved_for(parse_aggregator(text, 0), n);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    INFO(text, " n=", n);
    check_mentions(message, parts);
  };
  refused("krum:2", 6, {"krum:2", "2F + 3", "F = 2", "7 ranks", "has 6"});
  refused("bulyan:1", 6, {"bulyan:1", "4F + 3", "7 ranks", "has 6"});
  refused("trimmed:2", 4, {"trimmed:2", "n > 2B", "B = 2", "5 ranks", "has 4"});
  refused("multikrum:1,5", 5, {"multikrum:1,5", "M <= n - F = 5 - 1 = 4", "M is 5"});
  // At the limit they are accepted.
  CHECK_NOTHROW(resolved_for(parse_aggregator("krum:2", 0), 7));
  CHECK_NOTHROW(resolved_for(parse_aggregator("bulyan:1", 0), 7));
  CHECK_NOTHROW(resolved_for(parse_aggregator("trimmed:2", 0), 5));
  CHECK_NOTHROW(resolved_for(parse_aggregator("median", 0), 1));
}

TEST_CASE("every robust aggregator matches its float64 definition at every P, the same bits on every rank" *
          doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  for (int p = 1; p <= world.size(); ++p) {
    const Comm sub = world.split(world.rank() < p ? 0 : MPI_UNDEFINED, world.rank());
    if (!sub.valid()) continue;
    for (const std::string& text : specs_for(p))
      for (const AggregationForm form : {AggregationForm::segmented, AggregationForm::gathered})
        for (const std::size_t count : {std::size_t{1}, static_cast<std::size_t>(p) + 1, std::size_t{37}})
          for (const bool ties : {false, true}) check_aggregator(sub, text, form, count, ties);
    // One past the limit is refused on every rank, before any communication.
    const std::string past = "krum:" + std::to_string(p < 3 ? 0 : (p - 3) / 2 + 1);
    CHECK_THROWS_AS(make_robust_aggregation(sub, past, 0), std::invalid_argument);
  }
}

namespace {

std::size_t segment_size(std::size_t count, int p, long long s) {
  return partition(count, static_cast<std::size_t>(p), static_cast<std::size_t>(((s % p) + p) % p)).size();
}

// What rank r of p sends and receives in the segmented form on `count` floats, in bytes: the all-to-all (one segment
// to each other rank, every other rank's copy of its own segment back) and the ring's all-gather.
std::pair<std::size_t, std::size_t> segmented_bytes(std::size_t count, int p, int r) {
  std::size_t sent = 0, received = 0;
  for (int k = 1; k < p; ++k) {
    sent += segment_size(count, p, (r + k) % p + 1);  // the segment rank r + k owns
    received += segment_size(count, p, r + 1);
  }
  for (int k = 0; k < p - 1; ++k) {
    sent += segment_size(count, p, r + 1 - k);
    received += segment_size(count, p, r - k);
  }
  return {sent * sizeof(float), received * sizeof(float)};
}

std::size_t allreduces_of(const traffic::Recording& rec, std::size_t bytes) {
  std::size_t n = 0;
  for (const traffic::Collective& c : rec.collectives) n += c.call == "MPI_Allreduce" && c.bytes == bytes;
  return n;
}

}  // namespace

TEST_CASE(
    "robust aggregation traffic: the segmented form moves a ring allreduce's bytes, gather-to-one p times "
    "the vector into the root" *
    doctest::test_suite("sweep")) {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 2, "one rank sends nothing: the traffic of an aggregation needs two or more");
  const int p = world.size(), r = world.rank();
  const std::size_t count = 1003, vector_bytes = count * sizeof(float);
  const auto [sent, received] = segmented_bytes(count, p, r);
  const std::size_t pair_bytes = static_cast<std::size_t>(p) * static_cast<std::size_t>(p - 1) / 2 * sizeof(double);
  for (const std::string text : {"median", "trimmed:0", "krum:0", "bulyan:0", "cclip:1.0,2"}) {
    if (text != "median" && text != "trimmed:0" && text != "cclip:1.0,2" && p < 3) continue;
    auto agg = make_robust_aggregation(world, text, 0);
    std::vector<float> mine = input_of(r, count, 0, false);
    traffic::Recording rec;
    agg->run(std::span<float>(mine));
    INFO(text, " P=", p);
    CHECK(rec.bytes_sent() == sent);
    std::size_t in = 0;
    for (const traffic::Message& m : rec.receives) in += m.bytes;
    CHECK(in == received);
    CHECK(in <= 2 * vector_bytes);  // no rank takes in p vectors
    // Each peer gets this rank's own vector only as the one segment it owns (the rest it sends is aggregates).
    for (int peer = 0; peer < p; ++peer)
      if (peer != r) CHECK(rec.bytes_sent_to(peer) <= vector_bytes);
    // The collectives: the scatter's agreement check (8 int64), plus one allreduce of the distances, or of the norms
    // once per clipping step (at P = 8 the norms have the agreement check's size).
    const bool distances = text == "krum:0" || text == "bulyan:0", norms = text == "cclip:1.0,2";
    const std::size_t small_bytes = distances ? pair_bytes : p * sizeof(double), agreement_bytes = 8 * 8;
    const std::size_t small = distances ? 1 : norms ? 2 : 0;
    CHECK(allreduces_of(rec, small_bytes) + (small_bytes == agreement_bytes ? 0 : allreduces_of(rec, agreement_bytes)) ==
          small + 1);
    CHECK(rec.collectives.size() == 1 + small);
    for (const traffic::Collective& c : rec.collectives) CHECK(c.bytes < vector_bytes / 4);
  }
  // The baseline: every other rank's whole vector lands on rank 0.
  auto gathered = make_robust_aggregation(world, "median", 0, AggregationForm::gathered);
  std::vector<float> mine = input_of(r, count, 0, false);
  traffic::Recording rec;
  gathered->run(std::span<float>(mine));
  std::size_t in = 0;
  for (const traffic::Message& m : rec.receives) in += m.bytes;
  CHECK(in == (r == 0 ? static_cast<std::size_t>(p - 1) * vector_bytes : 0));
  CHECK(rec.bytes_sent() == (r == 0 ? 0 : vector_bytes));
}
