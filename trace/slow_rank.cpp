#include "trace/slow_rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace gradsync {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

using Arrivals = std::vector<std::pair<double, int>>;  // (aligned entry time, rank)

// Per collective (object, seq), every participating rank's entry; only the collectives all of them entered.
std::vector<Arrivals> complete_collectives(const GatheredTrace& t, int participants) {
  std::map<std::pair<std::uint32_t, std::uint64_t>, Arrivals> by_call;
  for (std::size_t r = 0; r < t.ranks.size(); ++r)
    for (const CollectiveEntry& e : t.ranks[r].entries)
      by_call[{e.object, e.seq}].emplace_back(t.aligned(static_cast<int>(r), e.at_s), static_cast<int>(r));
  std::vector<Arrivals> complete;
  for (auto& [key, arrivals] : by_call)
    if (static_cast<int>(arrivals.size()) == participants) complete.push_back(std::move(arrivals));
  return complete;
}

}  // namespace

SlowRankReport find_slow_rank(const GatheredTrace& t) {
  SlowRankReport report;
  std::vector<int> index(t.ranks.size(), -1);
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    if (t.ranks[r].entries.empty()) continue;
    index[r] = static_cast<int>(report.ranks.size());
    report.ranks.push_back({static_cast<int>(r)});
  }
  const int participants = static_cast<int>(report.ranks.size());
  if (participants < 2) return report;
  std::vector<std::vector<double>> lateness(report.ranks.size());
  for (Arrivals& a : complete_collectives(t, participants)) {
    std::sort(a.begin(), a.end());
    const auto& [last_at, last_rank] = a.back();
    lateness[static_cast<std::size_t>(index[static_cast<std::size_t>(last_rank)])].push_back(last_at -
                                                                                             a[a.size() - 2].first);
    ++report.collectives;
  }
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    report.ranks[i].last = lateness[i].size();
    report.ranks[i].median_lateness_s = median(lateness[i]);
    const double share =
        report.collectives ? static_cast<double>(lateness[i].size()) / static_cast<double>(report.collectives) : 0;
    if (share >= kSlowRankLastShare && report.ranks[i].median_lateness_s >= kSlowRankMinLateness_s)
      report.named = report.ranks[i].rank;
  }
  return report;
}

std::string format_slow_rank_report(const SlowRankReport& r) {
  if (r.collectives == 0) return "slow ranks: no collective was entered by every worker in the recorded window\n";
  std::string out = fmt::format("slow ranks: last into each of {} collectives (lateness: behind the next-latest rank)\n",
                                r.collectives);
  const auto share = [&](const SlowRankReport::Rank& k) {
    return 100.0 * static_cast<double>(k.last) / static_cast<double>(r.collectives);
  };
  for (const SlowRankReport::Rank& k : r.ranks)
    out += fmt::format("  rank {}: last into {:.0f}%, {:.3f} ms late at the median\n", k.rank, share(k),
                       k.median_lateness_s * 1e3);
  return out + format_slow_rank_verdict(r);
}

std::string format_slow_rank_verdict(const SlowRankReport& r) {
  if (r.collectives == 0) return "slow ranks: no collective was entered by every worker in the recorded window\n";
  const auto named = std::find_if(r.ranks.begin(), r.ranks.end(), [&](const auto& k) { return k.rank == r.named; });
  if (named != r.ranks.end())
    return fmt::format("rank {} was last into {:.0f}% of allreduces, {:.1f} ms late at the median\n", named->rank,
                       100.0 * static_cast<double>(named->last) / static_cast<double>(r.collectives),
                       named->median_lateness_s * 1e3);
  return fmt::format(
      "no rank was consistently late (a rank is named when last into >= {:.0f}% of them and >= {:.1f} "
      "ms late at the median)\n",
      100 * kSlowRankLastShare, kSlowRankMinLateness_s * 1e3);
}

std::string format_hang_lateness(const std::vector<std::optional<std::vector<CollectiveEntry>>>& heard) {
  GatheredTrace t;  // entries arrive on rank 0's clock already: every offset zero
  t.ranks.resize(heard.size());
  t.start.resize(heard.size());
  std::string without;
  for (std::size_t r = 0; r < heard.size(); ++r) {
    if (heard[r] && !heard[r]->empty())
      t.ranks[r].entries = *heard[r];
    else
      without += fmt::format(" {}{}", r, heard[r] ? " (recorded none)" : "");
  }
  return fmt::format("lateness before the hang, from the entry times the roll call brought; no data for ranks:{}\n{}",
                     without.empty() ? " none" : without, format_slow_rank_report(find_slow_rank(t)));
}

}  // namespace gradsync
