#pragma once
// The alpha-beta-gamma model of the hand-written allreduce methods: alpha the time of one message, beta the time per
// byte on the link, gamma the time per byte reduced. "auto" (auto_allreduce.hpp) picks a method per call with it.
// Links are of three kinds: inside a host (shared memory), between hosts under one switch, and between hosts under
// different switches (the far link: more hops, a larger alpha). The parameters come from a
// small tuning file that bench/cluster/fit_cost_model.py writes from measurements (scripts/tune.sh on one node,
// bench/cluster/bench_cluster.sh across hosts), or from built-in defaults when there is none.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gradsync {

struct LinkCost {
  double alpha_s = 0;          // per message
  double beta_s_per_byte = 0;  // per byte sent
};

struct CostModel {
  LinkCost intra;  // between ranks of one host
  LinkCost inter;  // between hosts
  // A pairwise exchange across hosts (both ranks send to and receive from each other at once, as in rd, rhd and a
  // ring of two) moves its bytes this many times slower than a one-way stream. Sent whole over TCP, each large
  // message's rendezvous waits behind the other direction's data on the same connection; sent in eager-sized pieces
  // (segments.hpp, the default between hosts) it runs at the link's rate. Fitted by bench_algorithms.sh.
  double inter_exchange_factor = 1;
  // Hosts under one switch; 0: every host under one (the far link unused). Consecutive ranks share a host and
  // consecutive hosts a switch; ranks on hosts under different switches talk over `far`. A butterfly step lasts as
  // long as its slowest pair, so it pays `far` when any of its pairs crosses switches; a ring waits at every step
  // for its slowest neighbour pair, so it pays `far` at every step once it spans more hosts than a switch holds.
  // Without far keys in the tuning file, far is the file's inter link.
  LinkCost far;
  int hosts_per_switch = 0;
  double gamma_s_per_byte = 0;
  std::string source;  // where the values came from, for run headers

  // Predicted seconds for the registry's `method` (collectives/methods.hpp) to sum `bytes` on `ranks` ranks placed
  // `ranks_per_host` to a host (consecutive ranks share a host; ranks_per_host == ranks: one host), with messages of
  // at most `chunk_bytes` where the method chunks: its entry's cost function (AllreduceMethod::cost). Nothing for a
  // method without one, or where its formula does not apply (hier on one host, or on hosts of one rank).
  std::optional<double> predict(std::string_view method, std::size_t bytes, int ranks, int ranks_per_host,
                                std::size_t chunk_bytes) const;
};

// What a method's cost function is asked (AllreduceMethod::cost): the sum of `bytes` on `ranks` ranks placed
// `ranks_per_host` to a host, in messages of at most `chunk_bytes` where the method chunks (0: whole).
struct CostQuery {
  std::size_t bytes = 0;
  int ranks = 1;
  int ranks_per_host = 1;
  std::size_t chunk_bytes = 0;
};

// The links a query's messages cross, which the methods' formulas share: consecutive ranks share a host and
// consecutive hosts a switch; ranks on hosts under different switches talk over the far link.
class CostLinks {
 public:
  CostLinks(const CostModel& model, const CostQuery& query);
  int hosts() const { return hosts_; }
  // A ring of `members` across `ring_hosts` hosts waits at every step for its slowest neighbour pair: once it spans
  // more hosts than a switch holds, the pairs on either side of a switch boundary. A ring of two members is a
  // pairwise exchange, which across hosts pays the exchange factor.
  LinkCost ring(int members, int ring_hosts) const;
  // The ring over every rank: the intra link on one host.
  LinkCost flat_ring() const { return hosts_ <= 1 ? model_.intra : ring(query_.ranks, hosts_); }
  // A butterfly step between core ranks `distance` apart (exchange_allreduce.hpp: the ranks past the largest power
  // of two fold into their neighbours): all its pairs run at once and it lasts as long as its slowest, inside a
  // host, across hosts (where a host's ranks share its link) or across switches.
  LinkCost butterfly(int distance) const;
  int butterfly_levels() const;  // log2 of the core's size
  // The fold before the core's steps and the unfold after them, for `bytes`: 0 on a power of two.
  double fold_seconds(double bytes) const;
  // Messages of at most the query's chunk that `piece` bytes take (1 when it does not chunk).
  double messages(double piece) const;

 private:
  LinkCost exchange_on(LinkCost link) const;
  template <class Pair>
  LinkCost step_link(int pairs, Pair pair) const;
  const CostModel& model_;
  CostQuery query_;
  int per_host_, hosts_;
};

// The built-in parameters (docs/collectives.md says where they come from).
CostModel default_cost_model();
// Reads a tuning file: lines "key = value" (intra_alpha_us, intra_beta_ns_per_byte, inter_alpha_us,
// inter_beta_ns_per_byte, inter_exchange_factor, far_alpha_us, far_beta_ns_per_byte, hosts_per_switch (a whole
// number), gamma_ns_per_byte; '#' starts a comment); keys it lacks keep the defaults, and the far link the file's
// inter link. Throws std::runtime_error naming the file, the line and what is wrong with it.
CostModel load_cost_model(const std::string& path);
// $GRADSYNC_TUNING if set (it must be readable), else $HOME/.config/gradsync/tuning.txt if it exists, else the
// defaults. Local: each process reads its own; auto makes every rank use rank 0's.
CostModel find_cost_model();
// "" when $GRADSYNC_TUNING is unset or empty, or names a tuning file load_cost_model reads; otherwise one line naming
// the variable, the path and why (the OS's reason a file cannot be opened, or the bad line). A start-up check, so
// that a run refuses the file before any work instead of when auto first reads it.
std::string tuning_variable_problem();

}  // namespace gradsync
