#pragma once
// One entry of the allreduce method registry (methods.hpp): what a method needs and promises, its own options, how
// to build it, and what the cost model predicts for it. Each method's file defines its entry, `extern const
// AllreduceMethod <id>_allreduce_method`, and methods.def lists it once: a new method is its file and that line.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "collectives/allreduce.hpp"

namespace gradsync {

struct CostModel;  // cost_model.hpp
struct CostQuery;

// Dedicated server ranks a method needs.
enum class ServerRanks : std::uint8_t {
  none,  // every rank contributes and ends with the whole sum
  one,   // rank 0 serves
  some,  // ranks 0..k-1 serve, 1 <= k < P, k its own option kServersOption
};

// Own options that callers choosing a layout set by property, not by method name (the grid, the soak, the
// benchmarks, auto, federated averaging): a method with server ranks declares kServerContributesOption (1: servers
// add their own buffer too), one with ServerRanks::some also kServersOption, and a two_level one
// kRanksPerHostOption (0: hosts found with MPI_Comm_split_type; k > 0: hosts emulated as groups of k consecutive
// ranks). The method table test holds every entry to this.
inline constexpr std::string_view kServersOption = "servers";
inline constexpr std::string_view kServerContributesOption = "server_contributes";
inline constexpr std::string_view kRanksPerHostOption = "ranks_per_host";

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
  bool two_level = false;  // a host level and a cross-host level (hier_allreduce.hpp): kRanksPerHostOption
  bool library = false;    // the MPI library's collective: its messages are not gradsync's to count (wire_meter.hpp)
  // The options of its own it reads from options.own, declared in its file (method_options.hpp).
  std::span<const MethodOption> options = {};
  // Plans the method, with options.own already checked against `options`; the contract of make_allreduce.
  std::unique_ptr<Allreduce> (*build)(const Comm& comm, const AllreduceOptions& options) = nullptr;
  // The cost model's prediction (seconds) for a query on more than one rank and more than zero bytes, or nothing
  // where the formula does not apply; nullptr: not modelled. "auto" chooses among the modelled methods.
  std::optional<double> (*cost)(const CostModel& model, const CostQuery& query) = nullptr;
  bool modelled() const { return cost != nullptr; }

  // Checks options.own against `options` (std::invalid_argument naming the method and the key), then build().
  std::unique_ptr<Allreduce> make(const Comm& comm, const AllreduceOptions& options) const;
  // Whether it declares an option called `key`.
  bool takes(std::string_view key) const;

  // With default options every rank contributes and holds the whole sum (what training needs).
  bool every_rank_gets_sum() const { return servers == ServerRanks::none; }
};

// `options` with what is automatic in them (segment_bytes, and for a `chunked` method chunk_bytes and ring_window)
// resolved for `comm`: with_transport_defaults for whether its ranks share a node, which is one collective
// MPI_Comm_split_type over `comm`, made only when something is automatic. Every rank of `comm` calls it alike.
AllreduceOptions resolve_transport(const Comm& comm, const AllreduceOptions& options, bool chunked);

}  // namespace gradsync
