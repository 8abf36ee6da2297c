#pragma once
// Gossip topologies: which ranks a rank averages with at a step, and with what weights. As in Bluefog's
// topology_util, a topology is a function from (p, rank, step) to a neighbourhood; the mixing matrix W is formed only
// by mixing_matrix() (tests, and the spectral gap reported at the start of a run). Every W here is symmetric and
// doubly stochastic: a rank's neighbours all have its degree, and it gives each of them and itself 1 / (degree + 1).
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gradsync {

enum class Topology : std::uint8_t { ring, torus, exp, exp1, complete };

struct TopologyInfo {
  Topology id;
  std::string_view name;     // its --topology text
  std::string_view summary;  // one line for --help and the docs
};

// Every topology, in the enum's order: the one list --topology, the tests and the sweeps read.
std::span<const TopologyInfo> topology_table();
const TopologyInfo& topology_info(Topology t);
// The topology called `name`, or nullptr.
const TopologyInfo* find_topology(std::string_view name);
std::string topology_names(std::string_view separator = ", ");

struct Peer {
  int rank = 0;
  double weight = 0;
};

// What a rank mixes at one step: x <- self_weight * x + sum over peers of weight * x_peer. Peers are distinct, sorted
// by rank and never the rank itself; self_weight plus their weights is 1.
struct Neighbourhood {
  double self_weight = 1;
  std::vector<Peer> peers;
};

// The rows and columns of `torus` on p ranks: rows is the largest divisor of p at most sqrt(p) (a prime p is a 1 x p
// torus, which is the ring). Rank r sits at row r / columns, column r % columns.
struct TorusShape {
  int rows = 1;
  int columns = 1;
};
TorusShape torus_shape(int p);

// How many steps a topology's neighbourhoods take to repeat: exp1's ceil(log2 p) (1 when p <= 2), 1 for the others.
int topology_period(Topology t, int p);

// Rank `rank`'s neighbourhood among p ranks at step `step` (>= 0). Requires 0 <= rank < p.
//   ring      rank +- 1
//   torus     up, down, left and right on torus_shape(p), wrapping
//   exp       rank +- 2^k for every 2^k < p (the static exponential graph, made symmetric)
//   exp1      one peer, rank XOR 2^(step mod period), weights 1/2: after log2 p steps every rank holds the mean when
//             p is a power of two. On other p a rank whose partner would be p or more keeps its model that step.
//   complete  every other rank, 1/p each
// Duplicates (ring on 2 ranks, a torus of 2 rows) count once.
Neighbourhood neighbourhood(Topology t, int p, int rank, long step);

// W at `step`, p x p row-major: W[i][j] is the weight rank i gives rank j. For tests and reports.
std::vector<double> mixing_matrix(Topology t, int p, long step);

// 1 - sigma_2(M)^(1/period), where M is the product of W over one period and sigma_2 its largest singular value on
// the vectors orthogonal to the all-ones one: how much of the disagreement between ranks one step removes, averaged
// over a period. For the static topologies that is the usual 1 - |lambda_2(W)|. 0 when the graph is disconnected;
// 1 when one period averages exactly (complete, exp1 on a power of two). O(p * degree) for every topology but exp1,
// whose W is not the same from every rank: exp1 on p not a power of two takes the dense road, O(p^3).
double spectral_gap(Topology t, int p);

// The eigenvalues of the symmetric n x n matrix `a` (row-major, read only), in no particular order: cyclic Jacobi
// rotations in double precision.
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int n);

}  // namespace gradsync
