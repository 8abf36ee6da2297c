#pragma once
// One entry of the allreduce method registry (methods.hpp): what a method needs and promises, and how to build it.
// Its own header so that a method built from the others ("auto") can take the registry's entries without
// including the registry, which includes every method.
#include <cstdint>
#include <memory>
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
  bool library = false;    // the MPI library's collective: its messages are not gradsync's to count (wire_meter.hpp)
  // Plans the method; the contract of make_allreduce.
  std::unique_ptr<Allreduce> (*make)(const Comm& comm, const AllreduceOptions& options) = nullptr;

  // With default options every rank contributes and holds the whole sum (what training needs).
  bool every_rank_gets_sum() const { return servers == ServerRanks::none; }
};

}  // namespace gradsync
