#include "collectives/methods.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "collectives/auto_allreduce.hpp"
#include "collectives/hier_allreduce.hpp"
#include "collectives/mpi_allreduce.hpp"
#include "collectives/ps_allreduce.hpp"
#include "collectives/rd_allreduce.hpp"
#include "collectives/rhd_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace gradsync {
namespace {

// with_transport_defaults for this communicator: one collective MPI_Comm_split_type when anything the method
// reads is automatic, none otherwise.
AllreduceOptions resolved(const Comm& comm, const AllreduceOptions& o, bool chunked) {
  const bool automatic = o.segment_bytes == kAutoSegmentBytes ||
                         (chunked && (o.chunk_bytes == kAutoChunkBytes || o.ring_window == kAutoRingWindow));
  return automatic ? with_transport_defaults(o, comm.on_one_node(), chunked) : o;
}

std::unique_ptr<Allreduce> make_ring(const Comm& comm, AllreduceOptions o, bool bf16) {
  o.bf16_wire = bf16;
  return std::make_unique<RingAllreduce>(comm, resolved(comm, o, true));
}

constexpr AllreduceMethod kMethods[] = {
    {.name = "ring",
     .summary = "ring allreduce: reduce-scatter then all-gather with the neighbours, 2(P-1) steps",
     .chunked = true,
     .segmented = true,
     .modelled = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) { return make_ring(comm, o, false); }},
    {.name = "ps",
     .summary = "central parameter server on rank 0: workers push, the server sums in rank order and sends back",
     .servers = ServerRanks::one,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       AllreduceOptions one = o;
       one.servers = 1;
       return std::make_unique<PsAllreduce>(comm, one, "ps");
     }},
    {.name = "ps-sharded",
     .summary = "parameter server sharded over ranks 0..servers-1, each owning a key range",
     .servers = ServerRanks::some,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<PsAllreduce>(comm, o, "ps-sharded");
     }},
    {.name = "mpi",
     .summary = "MPI_Allreduce (MPI_IN_PLACE, MPI_SUM): the vendor baseline",
     .library = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<MpiAllreduce>(comm, o);
     }},
    {.name = "rd",
     .summary = "recursive doubling: log2 P steps of the whole buffer, for small messages",
     .segmented = true,
     .modelled = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<RecursiveDoublingAllreduce>(comm, resolved(comm, o, false));
     }},
    {.name = "rhd",
     .summary = "recursive halving and doubling (Rabenseifner): 2 log2 P steps of halving, then doubling, pieces",
     .segmented = true,
     .modelled = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<RecursiveHalvingDoublingAllreduce>(comm, resolved(comm, o, false));
     }},
    {.name = "hier",
     .summary = "two-level: reduce-scatter inside each host, a ring across hosts per local rank, all-gather inside",
     .chunked = true,
     .segmented = true,
     .two_level = true,
     .modelled = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<HierAllreduce>(comm, o);
     }},
    {.name = "auto",
     .summary = "per call, the modelled method the fitted cost model predicts fastest (tuning file or defaults)",
     .two_level = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
       return std::make_unique<AutoAllreduce>(comm, o, allreduce_method_table());
     }},
    {.name = "ring-bf16",
     .summary = "the ring sending float32 as bfloat16: half the bytes, each value rounded to 2^-8 per hop",
     .exact = false,
     .float32_only = true,
     .chunked = true,
     .segmented = true,
     .make = [](const Comm& comm, const AllreduceOptions& o) { return make_ring(comm, o, true); }},
};

}  // namespace

std::span<const AllreduceMethod> allreduce_method_table() { return kMethods; }

const AllreduceMethod* find_allreduce_method(std::string_view name) {
  for (const AllreduceMethod& m : kMethods)
    if (m.name == name) return &m;
  return nullptr;
}

std::string allreduce_method_names(bool (*keep)(const AllreduceMethod&), std::string_view separator) {
  std::string names;
  for (const AllreduceMethod& m : kMethods)
    if (keep(m)) names += fmt::format("{}{}", names.empty() ? "" : separator, m.name);
  return names;
}

std::string allreduce_method_listing() {
  std::string out;
  for (const AllreduceMethod& m : kMethods) {
    const char* servers = m.servers == ServerRanks::none  ? "servers=none"
                          : m.servers == ServerRanks::one ? "servers=1"
                                                          : "servers=k";
    out += fmt::format("{}\t{} {} {}{}{}{}{}\t{}\n", m.name, m.exact ? "exact" : "rounded",
                       m.float32_only ? "float32" : "any-type", servers, m.chunked ? " chunked" : "",
                       m.segmented ? " segmented" : "", m.two_level ? " two-level" : "", m.modelled ? " modelled" : "",
                       m.summary);
  }
  return out;
}

const std::vector<std::string>& allreduce_methods() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const AllreduceMethod& m : kMethods) v.emplace_back(m.name);
    return v;
  }();
  return names;
}

std::unique_ptr<Allreduce> make_allreduce(std::string_view method, const Comm& comm, const AllreduceOptions& options) {
  if (const AllreduceMethod* m = find_allreduce_method(method)) return m->make(comm, options);
  throw std::invalid_argument(fmt::format("unknown allreduce method '{}' (choose from {})", method,
                                          allreduce_method_names([](const AllreduceMethod&) { return true; })));
}

}  // namespace gradsync
