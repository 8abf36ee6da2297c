#include "trainers/checkpoint/host_map.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

namespace gradsync {

std::string this_host_name() {
  if (const char* env = std::getenv("GRADSYNC_HOST"); env != nullptr && *env != '\0') return env;
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

HostMap::HostMap(const Comm& world) {
  constexpr int kNameBytes = 256;  // fixed width: one all_gather, no lengths to exchange first
  std::array<char, kNameBytes> mine{};
  const std::string me = this_host_name();
  std::strncpy(mine.data(), me.c_str(), kNameBytes - 1);
  const std::vector<char> all = world.all_gather(mine);
  std::vector<std::string> hosts;
  for (int r = 0; r < world.size(); ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * kNameBytes);
  index(hosts);
}

HostMap::HostMap(std::vector<std::string> hosts_of_ranks) { index(hosts_of_ranks); }

void HostMap::index(const std::vector<std::string>& hosts_of_ranks) {
  for (std::size_t r = 0; r < hosts_of_ranks.size(); ++r) {
    const auto it = std::find(names_.begin(), names_.end(), hosts_of_ranks[r]);
    if (it == names_.end()) {
      names_.push_back(hosts_of_ranks[r]);
      leaders_.push_back(static_cast<int>(r));
      host_of_rank_.push_back(static_cast<int>(names_.size()) - 1);
    } else {
      host_of_rank_.push_back(static_cast<int>(it - names_.begin()));
    }
  }
}

std::vector<int> HostMap::holders(int owner, int replicas) const {
  std::vector<int> out = {owner};
  const int first = host_of(owner);
  for (int step = 1; step < hosts() && static_cast<int>(out.size()) < replicas; ++step)
    out.push_back(leader((first + step) % hosts()));
  return out;
}

}  // namespace gradsync
