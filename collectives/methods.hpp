#pragma once
// The one list of allreduce methods. Everything that offers a choice of method (train --sync, bench_allreduce,
// bench_sync, the soak, the doctest grid, and scripts through `bench_allreduce --list-methods`) reads this table
// instead of repeating names, and asks its properties instead of testing names: a method added here reaches all of
// them. make_allreduce() builds a method by its name from this table. A new method is its own file (its entry, with
// its own options) and one line in methods.def.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "collectives/allreduce.hpp"
#include "collectives/allreduce_method.hpp"

namespace gradsync {

// Every method, in the order benchmarks list them.
std::span<const AllreduceMethod> allreduce_method_table();
// The method called `name`, or nullptr.
const AllreduceMethod* find_allreduce_method(std::string_view name);
// Names of the methods for which `keep` is true, joined by `separator` (for help and error texts).
std::string allreduce_method_names(bool (*keep)(const AllreduceMethod&), std::string_view separator = ", ");
// One line per method, "name<TAB>properties<TAB>summary<TAB>own options", properties space-separated from: exact |
// rounded, any-type | float32, servers=none | servers=1 | servers=k, chunked, segmented, two-level, modelled; own
// options as describe_method_options (empty for none). Scripts take the first field (cut -f1) and may filter on the
// second (e.g. awk -F'\t' '$2 ~ /exact/').
std::string allreduce_method_listing();

// Plans `method` (a name in allreduce_method_table(), optionally followed by its own options as text,
// "ps-sharded:servers=2", which are added to options.own and win over them) on `comm`. Every rank of `comm` must call it
// with the same method and options; for a chunked or segmented method with chunk_bytes, ring_window or
// segment_bytes automatic it is a collective call, which resolves them for shared memory when all ranks share a
// node (kSharedMemoryChunkBytes, kWholeMessages, kSharedMemoryRingWindow) and for the network otherwise
// (kNetworkChunkBytes, kNetworkSegmentBytes, kNetworkRingWindow); options() then holds the resolved values. Throws
// std::invalid_argument for an unknown method, an option the method does not declare or a value out of its range, or
// options that cannot work on this communicator (e.g. servers >= size).
std::unique_ptr<Allreduce> make_allreduce(std::string_view method, const Comm& comm,
                                          const AllreduceOptions& options = {});
// The names of allreduce_method_table(), in its order.
const std::vector<std::string>& allreduce_methods();

}  // namespace gradsync
