#include "bench/bus_share.hpp"

#include <fmt/format.h>

#include <map>

#include "bench/bench_options.hpp"

namespace gradsync::bench {

std::string bus_share_summary(const std::vector<BusSample>& samples, double link_gbps) {
  std::map<std::size_t, double> memory_bound;  // membound's bus bandwidth per size
  for (const BusSample& s : samples)
    if (s.method == "membound") memory_bound[s.bytes] = s.busbw_gbps;
  if (link_gbps <= 0 && memory_bound.empty()) return {};
  std::map<std::string, BusSample> best;
  for (const BusSample& s : samples) {
    if (s.method == "membound" || s.method == "xcore") continue;
    auto [it, fresh] = best.emplace(s.method, s);
    if (!fresh && s.busbw_gbps > it->second.busbw_gbps) it->second = s;
  }
  std::string out = "# bus bandwidth against the hardware (best size per method):\n";
  for (const auto& [method, s] : best) {
    out += fmt::format("#   {:>12}: {:.3f} GB/s at {}", method, s.busbw_gbps, human_bytes(s.bytes));
    if (link_gbps > 0)
      out += fmt::format(", {:.0f}% of the {} Gbit/s link", 100 * s.busbw_gbps * 8 / link_gbps, link_gbps);
    if (const auto bound = memory_bound.find(s.bytes); bound != memory_bound.end() && bound->second > 0)
      out += fmt::format(", {:.0f}% of the measured memory bound ({:.3f} GB/s)", 100 * s.busbw_gbps / bound->second,
                         bound->second);
    out += "\n";
  }
  return out;
}

}  // namespace gradsync::bench
