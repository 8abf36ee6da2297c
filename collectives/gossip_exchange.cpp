#include "collectives/gossip_exchange.hpp"

#include <algorithm>
#include <stdexcept>

#include "collectives/agreement.hpp"
#include "collectives/watchdog.hpp"

namespace gradsync {

GossipExchange::GossipExchange(const Comm& comm, Topology topology, std::size_t count)
    : comm_(comm), count_(count), tag_(comm.reserve_tags(1)) {
  check_agreement(comm, "gossip exchange",
                  {.method = fingerprint_of_name(topology_info(topology).name),
                   .count = count,
                   .dtype = static_cast<std::uint64_t>(Dtype::f32)});
  const int p = comm.size();
  std::size_t widest = 0;
  for (int s = 0; s < topology_period(topology, p); ++s) {
    plan_.push_back(neighbourhood(topology, p, comm.rank(), s));
    widest = std::max(widest, plan_.back().peers.size());
  }
  inbox_.resize(widest * count);
  requests_.reserve(2 * widest);
}

void GossipExchange::start(long step, std::span<const float> mine) {
  if (in_flight_) throw std::logic_error("GossipExchange::start: the previous exchange was not waited for");
  if (mine.size() != count_) throw std::invalid_argument("GossipExchange::start: wrong vector size");
  step_ = step;
  in_flight_ = true;
  requests_.clear();
  const Neighbourhood& n = neighbours(step);
  for (std::size_t i = 0; i < n.peers.size(); ++i)
    requests_.push_back(comm_.irecv(std::span(inbox_).subspan(i * count_, count_), n.peers[i].rank, tag_));
  for (const Peer& peer : n.peers) requests_.push_back(comm_.isend(mine, peer.rank, tag_));
}

bool GossipExchange::test() {
  if (!in_flight_) return true;
  if (!comm_.test_all(requests_, "gossip exchange with the neighbours")) return false;
  in_flight_ = false;
  return true;
}

void GossipExchange::wait() {
  if (!in_flight_) return;
  const WaitScope waiting("gossip exchange with the neighbours");
  comm_.wait_all(requests_, "gossip exchange with the neighbours");
  in_flight_ = false;
}

void GossipExchange::mix(std::span<const float> mine, std::span<float> out) const {
  const Neighbourhood& n = neighbours(step_);
  const float self = static_cast<float>(n.self_weight);
  for (std::size_t k = 0; k < count_; ++k) out[k] = self * mine[k];
  for (std::size_t i = 0; i < n.peers.size(); ++i) {
    const float w = static_cast<float>(n.peers[i].weight);
    const float* in = inbox_.data() + i * count_;
    for (std::size_t k = 0; k < count_; ++k) out[k] += w * in[k];
  }
}

double GossipExchange::bytes_per_step() const {
  double peers = 0;
  for (const Neighbourhood& n : plan_) peers += static_cast<double>(n.peers.size());
  return peers / static_cast<double>(plan_.size()) * static_cast<double>(count_ * sizeof(float));
}

}  // namespace gradsync
