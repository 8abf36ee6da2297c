#pragma once
// The one list of allreduce methods. Everything that offers a choice of method (train --sync, bench_allreduce,
// bench_sync, the soak, the doctest grid, and scripts through `bench_allreduce --list-methods`) reads this table
// instead of repeating names, and asks its properties instead of testing names: a method added here reaches all of
// them. make_allreduce() (allreduce.hpp) builds a method by its name from this table.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "collectives/allreduce.hpp"

namespace gradsync {

// Dedicated server ranks a method needs.
enum class ServerRanks : std::uint8_t {
  none,  // every rank contributes and ends with the whole sum
  one,   // rank 0 serves (options.servers is forced to 1)
  some,  // ranks 0..options.servers-1 serve, 1 <= servers < P
};

struct AllreduceMethod {
  std::string_view name;
  std::string_view summary;  // one line for help texts and --list-methods
  // Integer sums exact, and float sums exact whenever the partial sums are (nothing rounded on the way): the soak and
  // the exactness grid check these. Every method leaves the same bits on every rank that holds the result.
  bool exact = true;
  bool float32_only = false;
  ServerRanks servers = ServerRanks::none;
  bool chunked = false;    // reads options.chunk_bytes (its message size)
  bool segmented = false;  // reads options.segment_bytes (cuts pairwise exchanges: segments.hpp)
  bool two_level = false;  // reads options.ranks_per_host (hosts found or emulated: hier_allreduce.hpp)
  bool modelled = false;   // cost_model.hpp predicts it: "auto" chooses among these
  // Plans the method; the contract of make_allreduce.
  std::unique_ptr<Allreduce> (*make)(const Comm& comm, const AllreduceOptions& options) = nullptr;

  // With default options every rank contributes and holds the whole sum (what training needs).
  bool every_rank_gets_sum() const { return servers == ServerRanks::none; }
};

// Every method, in the order benchmarks list them.
std::span<const AllreduceMethod> allreduce_method_table();
// The method called `name`, or nullptr.
const AllreduceMethod* find_allreduce_method(std::string_view name);
// Names of the methods for which `keep` is true, joined by `separator` (for help and error texts).
std::string allreduce_method_names(bool (*keep)(const AllreduceMethod&), std::string_view separator = ", ");
// One line per method, "name<TAB>properties<TAB>summary", properties space-separated from: exact | rounded,
// any-type | float32, servers=none | servers=1 | servers=k, chunked, segmented, two-level, modelled. Scripts take the
// first field (cut -f1) and may filter on the second (e.g. awk -F'\t' '$2 ~ /exact/').
std::string allreduce_method_listing();

}  // namespace gradsync
