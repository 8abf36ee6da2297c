#pragma once
// --sync ps's own options (its flags fill them, ps.cpp), kept in TrainConfig's ps slot. The shard count, --servers,
// stays TrainConfig's: which ranks serve is every family's question (TrainConfig::server_ranks).
#include "trainers/config/train_config.hpp"
#include "trainers/core/sync_method.hpp"

namespace gradsync {

struct PsOptions {
  PsMode mode = PsMode::bsp;
  int staleness = 0;  // ssp bound
  // Servers that hold each key range live (--replicas): its primary, server s, and the next replicas - 1 servers in
  // the ring of servers, which take the round's sum from it (chain replication) and apply the same update. 1: the
  // primary alone. BSP only (asp's and ssp's ranges move one gradient at a time).
  int replicas = 1;
};

// `c`'s parameter-server options; the defaults when none were set.
inline const PsOptions& ps_options(const TrainConfig& c) { return c.options_or_default<PsOptions>(SyncFamily::ps); }
// Replaces `c`'s parameter-server options (copies of `c` made before keep theirs).
inline void set_ps_options(TrainConfig& c, const PsOptions& options) { c.set_plain_options(SyncFamily::ps, options); }

}  // namespace gradsync
