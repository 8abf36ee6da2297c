#pragma once
// The cost model's view of gossip (collectives/cost_model.hpp, collectives/topology.hpp): how long one step's
// exchange takes, from the same fitted links auto chooses allreduce methods by. `cost_model --gossip` prints it.
#include <cstddef>

#include "collectives/cost_model.hpp"
#include "collectives/topology.hpp"

namespace gradsync {

// Predicted seconds of one gossip step's exchange at `step`: every rank sends its `bytes` model to each of its
// neighbours and receives theirs, on `ranks` ranks placed `ranks_per_host` to a host (consecutive ranks share a host,
// consecutive hosts a switch, as in CostModel::predict). A host's sends to other hosts share its one link, so they
// leave one after another (alpha each, its bytes at the link's beta); a rank's sends inside its host cost the intra
// link; the step lasts as long as the slowest host. With `async` (collectives/pair_gossip.hpp): each active rank
// trades its model with one passive neighbour, both directions at once, a pairwise exchange.
double predict_gossip_step(const CostModel& model, Topology topology, std::size_t bytes, int ranks, int ranks_per_host,
                           long step, bool async);
// The same averaged over the topology's period (exp1's steps differ).
double predict_gossip_step(const CostModel& model, Topology topology, std::size_t bytes, int ranks, int ranks_per_host,
                           bool async);

}  // namespace gradsync
