#pragma once
// "Is my bandwidth normal": each method's best bus bandwidth as a share of what the hardware can give, the link rate
// the user names (across hosts) or the measured memory bound (the membound pseudo-method, one node).
#include <cstddef>
#include <string>
#include <vector>

namespace gradsync::bench {

struct BusSample {
  std::string method;
  std::size_t bytes = 0;
  double busbw_gbps = 0;  // GB/s, 1e9 bytes/s
};

// One line per method (bound rows "membound" and "xcore" excluded): its best bus bandwidth and the size it was met at,
// as a share of `link_gbps` (Gbit/s; 0: not given) and of the membound row at that size (if measured). Empty if there
// is nothing to compare with.
std::string bus_share_summary(const std::vector<BusSample>& samples, double link_gbps);

}  // namespace gradsync::bench
