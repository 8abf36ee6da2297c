#pragma once
// --sync gossip's own options (its flags fill them, gossip.cpp), kept in TrainConfig's gossip slot.
#include "collectives/topology.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

struct GossipOptions {
  Topology topology = Topology::ring;
  bool async = false;  // AD-PSGD: one peer a step, no barrier (collectives/pair_gossip.hpp)
  // With --compress: CHOCO-SGD's consensus step size (trainers/families/gossip/choco_gossip.cpp), in (0, 1].
  static constexpr float kDefaultGamma = 0.1f;
  float gamma = kDefaultGamma;
};

// `c`'s gossip options; the defaults when none were set.
inline const GossipOptions& gossip_options(const TrainConfig& c) {
  return c.options_or_default<GossipOptions>(SyncFamily::gossip);
}
// Replaces `c`'s gossip options (copies of `c` made before keep theirs).
inline void set_gossip_options(TrainConfig& c, const GossipOptions& options) {
  c.set_plain_options(SyncFamily::gossip, options);
}

}  // namespace gradsync
