#pragma once
// Which robust aggregator to run and with which parameters, parsed from its text ("krum:2", "multikrum:2,4",
// "trimmed:1", "cclip:1.0"), and the rule each one sets on the number of ranks. The list is aggregators.def.
#include <cstdint>
#include <string>
#include <string_view>

namespace gradsync {

enum class AggregatorKind : std::uint8_t {
#define GRADSYNC_AGGREGATOR(id, name, parameters, min_ranks, requirement, summary) id,
#include "collectives/robust/aggregators.def"
#undef GRADSYNC_AGGREGATOR
};

struct AggregatorSpec {
  AggregatorKind kind = AggregatorKind::mean;
  int f = 0;           // krum, multikrum, bulyan: the Byzantine workers tolerated (F); trimmed: B
  int m = 0;           // multikrum: how many vectors are averaged; 0 until resolved_for() (then n - F if not given)
  double tau = 0;      // cclip: the clipping radius
  int iterations = 1;  // cclip: clipping steps per aggregation (L)
  std::string text;    // what was parsed, for messages
};

// Parses `text`: a name of aggregators.def, then ':' and its parameters. The F of krum, multikrum and bulyan and the B
// of trimmed may be left out ("krum"): they are then `default_f` (the run's Byzantine count). M of multikrum may be
// left out (n - F, set by resolved_for). cclip needs TAU; L defaults to 1. Throws std::invalid_argument naming the
// text and what is wrong (an unknown name, with the list; a parameter that is not a number, negative, missing or
// extra). Local.
AggregatorSpec parse_aggregator(std::string_view text, int default_f);

// `spec` for `n` ranks: M filled in, and every requirement of aggregators.def checked. Throws std::invalid_argument
// naming the aggregator's text, the rule and the numbers ("krum:2 needs n >= 2F + 3 = 7 ranks; this run has 4").
AggregatorSpec resolved_for(AggregatorSpec spec, int n);

// The fewest ranks `spec` accepts (the min_ranks of aggregators.def).
int min_ranks(const AggregatorSpec& spec);
// Whether the aggregator needs the pairwise distance matrix (krum, multikrum, bulyan).
bool needs_distances(AggregatorKind kind);
// "mean, median, trimmed:B, ..." in the order of aggregators.def, for help texts and refusals.
std::string aggregator_names();
// One line per aggregator of aggregators.def, in its order, for `train --list-aggregators`: the name as spelled
// (with its parameters), a tab, the ranks it needs ("n >= 2F + 3"), a tab, what it computes.
std::string aggregator_listing();
std::string_view aggregator_name(AggregatorKind kind);

}  // namespace gradsync
