#pragma once
// Which rank runs on which host, learned once per run: checkpoint replicas must land on different hosts, and the
// ranks of one host share its local checkpoint directory.
#include <string>
#include <vector>

#include "collectives/comm.hpp"

namespace gradsync {

// This process's host: $GRADSYNC_HOST when set and not empty (the emulated cluster's hosts share one kernel and
// so one host name), else gethostname().
std::string this_host_name();

class HostMap {
 public:
  // Collective over `world`: every rank learns every rank's host.
  explicit HostMap(const Comm& world);
  // For tests: rank r runs on hosts[r].
  explicit HostMap(std::vector<std::string> hosts_of_ranks);

  int hosts() const { return static_cast<int>(names_.size()); }
  int host_of(int rank) const { return host_of_rank_[static_cast<std::size_t>(rank)]; }
  const std::string& name(int host) const { return names_[static_cast<std::size_t>(host)]; }
  int leader(int host) const { return leaders_[static_cast<std::size_t>(host)]; }  // its lowest rank
  bool is_leader(int rank) const { return leader(host_of(rank)) == rank; }

  // Chain placement: `owner` first, then the lowest rank of each following host in host order (wrapping), until
  // `replicas` ranks on distinct hosts are chosen or every host has one.
  std::vector<int> holders(int owner, int replicas) const;

 private:
  void index(const std::vector<std::string>& hosts_of_ranks);
  std::vector<std::string> names_;  // hosts in order of their lowest rank
  std::vector<int> host_of_rank_, leaders_;
};

}  // namespace gradsync
