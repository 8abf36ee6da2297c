#include "collectives/auto_explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <mutex>
#include <tuple>

namespace gradsync {
namespace {

std::mutex g_mutex;
std::deque<AutoChoice> g_choices;  // a deque: entries never move, so callers keep references

}  // namespace

double AutoChoice::best_predicted_s() const {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [name, t] : predicted_s) best = std::min(best, t);
  return best;
}

double AutoChoice::regret() const {
  const double best = best_predicted_s();
  return calls > 0 && best > 0 && best < std::numeric_limits<double>::infinity()
             ? measured_s / static_cast<double>(calls) / best
             : 0;
}

AutoChoice& auto_choice(AutoChoice fresh) {
  const std::lock_guard lock(g_mutex);
  for (AutoChoice& c : g_choices)
    if (c.object == fresh.object && c.bytes == fresh.bytes) return c;
  return g_choices.emplace_back(std::move(fresh));
}

std::vector<AutoChoice> auto_choices() {
  const std::lock_guard lock(g_mutex);
  std::vector<AutoChoice> all(g_choices.begin(), g_choices.end());
  std::sort(all.begin(), all.end(), [](const AutoChoice& a, const AutoChoice& b) {
    return std::tie(a.object, a.bytes) < std::tie(b.object, b.bytes);
  });
  return all;
}

std::string format_auto_choices(const std::vector<AutoChoice>& choices) {
  if (choices.empty()) return "auto: no choices made (no auto allreduce ran in this process)\n";
  std::string out = fmt::format("{:>6} {:>5} {:>4} {:>12} {:>8} {:>7} {:>12} {:>7}  predicted (us)\n", "object", "ranks",
                                "/host", "bytes", "chosen", "calls", "measured_us", "regret");
  for (const AutoChoice& c : choices) {
    std::string predictions;
    for (const auto& [name, t] : c.predicted_s)
      predictions += fmt::format("{}{} {:.1f}", predictions.empty() ? "" : ", ", name, t * 1e6);
    const double mean = c.calls ? c.measured_s / static_cast<double>(c.calls) : 0;
    out += fmt::format("{:>6} {:>5} {:>4} {:>12} {:>8} {:>7} {:>12.1f} {:>7.2f}  {}\n", c.object, c.ranks,
                       c.ranks_per_host, c.bytes, c.chosen, c.calls, mean * 1e6, c.regret(), predictions);
  }
  return out;
}

}  // namespace gradsync
