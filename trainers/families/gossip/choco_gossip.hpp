#pragma once
// --sync gossip --compress NAME: the gossip family's compressed exchange, CHOCO-SGD (choco_gossip.cpp says how). Only
// the family's registry entry (gossip.cpp) calls these.
#include <cstddef>
#include <memory>
#include <string>

#include "trainers/core/sync_registry.hpp"

namespace gradsync {

// SyncFamilyInfo::check_compression: empty, or a one-line message naming the flag CHOCO-SGD cannot take (a compressor
// without a part of its own, --async, --error-feedback).
std::string check_choco_compression(const TrainConfig& config);
// With --compress, on `workers` workers: empty, or a one-line message naming --topology (neighbours that change from
// step to step) or --gossip-gamma (outside (0, 1]).
std::string check_choco_run(const TrainConfig& config, int workers);
// Floats a CHOCO-SGD synchronizer saves beyond gossip's replicas (Replicas) on `workers` workers: each worker's
// public copy and its neighbours' disagreement with it.
std::size_t choco_state_size(std::size_t parameter_count, int workers);
// The worker's CHOCO-SGD synchronizer; collective over setup.workers (it checks that they agree on the exchange).
// Needs setup.layers (the compressor's tensors): std::invalid_argument without them.
std::unique_ptr<Synchronizer> make_choco_gossip(const TrainConfig& config, const SyncSetup& setup);

}  // namespace gradsync
