#pragma once
// Finding the newest complete checkpoint set: each host leader lists what its directory holds, as text lines rank
// 0 can merge, and rank 0 picks the newest set with a valid copy of every piece on some host.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint_manifest.hpp"
#include "trainers/checkpoint/host_map.hpp"
#include "trainers/config/train_config.hpp"

namespace gradsync {

// One host's view of its checkpoint directory `dir`, read by the leader `rank` of the host this runs on; every
// piece file named by a manifest is read and checked (checkpoint_files.hpp). Never throws for what it finds: a
// file or set that cannot be used becomes a line saying why.
std::string inventory(const std::string& dir, int rank);

// A valid copy of a piece: the rank that can read it, and where.
struct PieceCopy {
  int rank;
  std::string path;
};

struct SetChoice {
  std::int64_t step = -1;
  Manifest manifest;
  std::string manifest_at;         // host:path of the manifest read
  std::vector<PieceCopy> sources;  // one per piece
  std::string notes;               // what was found unusable in sets at least as new as the one chosen
};

// Rank 0: the newest set of this run (`fingerprint`) complete among the hosts' inventories, concatenated in `all`.
// When there is none, `error` says why (naming each file and what is wrong with it, or the foreign run found) and
// the choice returned is empty. Throws CheckpointError for a manifest text that does not parse.
SetChoice choose_newest_set(const std::string& all, const TrainConfig& config, const HostMap& hosts,
                            const std::string& fingerprint, std::string& error);

// Rank 0: why this run cannot continue the chosen set (parameter or optimizer counts, batch, epochs left), or ""
// if it can.
std::string incompatibility(const SetChoice& c, const TrainConfig& config, std::size_t parameter_count);

}  // namespace gradsync
