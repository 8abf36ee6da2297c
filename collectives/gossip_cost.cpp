#include "collectives/gossip_cost.hpp"

#include <algorithm>
#include <vector>

#include "collectives/pair_gossip.hpp"

namespace gradsync {

double predict_gossip_step(const CostModel& model, Topology topology, std::size_t bytes, int p, int per_host, long step,
                           bool async) {
  if (p <= 1 || bytes == 0) return 0;
  const double n = static_cast<double>(bytes);
  const int per = std::max(1, per_host), hosts = (p + per - 1) / per;
  const auto host_of = [&](int rank) { return rank / per; };
  const auto crosses_switch = [&](int a, int b) {
    return model.hosts_per_switch > 0 && host_of(a) / model.hosts_per_switch != host_of(b) / model.hosts_per_switch;
  };
  // Per host: the messages and bytes its ranks send to other hosts under its switch and under others; per host, the
  // slowest of its ranks' sends inside it.
  struct Traffic {
    double near_messages = 0, near_bytes = 0, far_messages = 0, far_bytes = 0, intra = 0;
  };
  std::vector<Traffic> out(static_cast<std::size_t>(hosts));
  const auto send = [&](int from, int to, double volume) {
    Traffic& t = out[static_cast<std::size_t>(host_of(from))];
    if (host_of(to) == host_of(from)) {
      t.intra = std::max(t.intra, model.intra.alpha_s + volume * model.intra.beta_s_per_byte);
    } else if (crosses_switch(from, to)) {
      t.far_messages += 1;
      t.far_bytes += volume;
    } else {
      t.near_messages += 1;
      t.near_bytes += volume;
    }
  };
  if (async) {
    // A pairwise exchange across hosts pays the exchange factor, as the butterflies of CostModel::predict do.
    for (int a = 0; a < p; a += 2)
      if (const int b = pair_gossip_peer(topology, p, a, step); b >= 0) {
        send(a, b, n * model.inter_exchange_factor);
        send(b, a, n * model.inter_exchange_factor);
      }
  } else {
    for (int r = 0; r < p; ++r)
      for (const Peer& peer : neighbourhood(topology, p, r, step).peers) send(r, peer.rank, n);
  }
  double slowest = 0;
  for (const Traffic& t : out) {
    const double across = t.near_messages * model.inter.alpha_s + t.near_bytes * model.inter.beta_s_per_byte +
                          t.far_messages * model.far.alpha_s + t.far_bytes * model.far.beta_s_per_byte;
    slowest = std::max(slowest, std::max(t.intra, across));
  }
  return slowest;
}

double predict_gossip_step(const CostModel& model, Topology topology, std::size_t bytes, int p, int per_host,
                           bool async) {
  const int period = topology_period(topology, p);
  double sum = 0;
  for (int s = 0; s < period; ++s) sum += predict_gossip_step(model, topology, bytes, p, per_host, s, async);
  return sum / period;
}

}  // namespace gradsync
