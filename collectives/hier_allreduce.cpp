#include "collectives/hier_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/cost_model.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gradsync {
namespace {

Comm host_of(const Comm& comm, int ranks_per_host) {
  return ranks_per_host > 0 ? comm.split(comm.rank() / ranks_per_host, comm.rank()) : comm.split_by_node();
}

constexpr MethodOption kRanksPerHost{kRanksPerHostOption,
                                     "0: hosts found by MPI_Comm_split_type; k: groups of k consecutive ranks", 0, 0};
constexpr MethodOption kOptions[] = {kRanksPerHost};

int ranks_per_host_option(const AllreduceOptions& o) { return static_cast<int>(option_value(o.own, kRanksPerHost)); }

AllreduceOptions part_options(const AllreduceOptions& o, bool shared_memory) {
  AllreduceOptions part = with_transport_defaults(o, shared_memory, true);
  part.check_agreement = false;  // the whole method's check covers its parts
  part.own = {};                 // the ring has none of hier's options
  return part;
}

}  // namespace

HierAllreduce::HierAllreduce(Comm comm, AllreduceOptions options)
    : Allreduce(std::move(comm), options), local_(host_of(comm_, ranks_per_host_option(options))),
      cross_(comm_.split(local_.rank(), comm_.rank())) {
  const auto [fewest, most] = comm_.min_max(static_cast<std::uint64_t>(local_.size()));
  if (fewest != most)
    throw std::invalid_argument(
        fmt::format("hier: hosts have {} to {} ranks; it needs the same number on every host", fewest, most));
  if (const int per_host = ranks_per_host_option(options); per_host > 0 && comm_.size() % per_host != 0)
    throw std::invalid_argument(fmt::format("hier: {} ranks do not split into hosts of {}", comm_.size(), per_host));
  const bool cross_on_one_node = cross_.on_one_node();
  if (local_.size() > 1) {
    const AllreduceOptions inside = part_options(options, true);
    parts_[0] = std::make_unique<RingAllreduce>(local_, inside, RingPhases::reduce_scatter);
    parts_[2] = std::make_unique<RingAllreduce>(local_, inside, RingPhases::all_gather);
  }
  const AllreduceOptions across = part_options(options, cross_on_one_node);
  if (cross_.size() > 1) parts_[1] = std::make_unique<RingAllreduce>(cross_, across);
  options_.chunk_bytes = across.chunk_bytes;  // what options() reports: the message sizes on the network
  options_.segment_bytes = across.segment_bytes;
  options_.ring_window = across.ring_window;
}

void HierAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  data_ = data;
  count_ = count;
  type_ = type;
  if (!begin_part(0)) stage_ = {};
}

// After the reduce-scatter, local rank l holds the host's sum of slice (l + 1) % L: that slice is what crosses.
bool HierAllreduce::begin_part(int i) {
  for (part_ = i; part_ < 3; ++part_) {
    RingAllreduce* part = parts_[part_].get();
    if (!part) continue;
    if (part_ == 1) {
      const int l = local_.rank(), n = local_.size();
      const ElementRange slice = partition(count_, static_cast<std::size_t>(n), static_cast<std::size_t>((l + 1) % n));
      if (slice.size() == 0) continue;  // the same on every rank of this cross ring: they all skip it
      begin_of(*part, data_ + slice.begin * dtype_size(type_), slice.size(), type_);
    } else {
      begin_of(*part, data_, count_, type_);
    }
    stage_ = stage_of(*part);
    return true;
  }
  return false;
}

bool HierAllreduce::advance() {
  if (!advance_of(*parts_[part_])) {
    stage_ = stage_of(*parts_[part_]);
    return false;
  }
  return !begin_part(part_ + 1);
}

// Inside each host a ring over its L ranks; across hosts one ring per local rank, all L of a host crossing its link
// at once (the link's bandwidth shared by L slices); nothing on one host or on hosts of one rank (the ring there).
std::optional<double> hier_cost(const CostModel& model, const CostQuery& q) {
  const CostLinks links(model, q);
  if (links.hosts() <= 1 || q.ranks_per_host <= 1) return std::nullopt;
  const double n = static_cast<double>(q.bytes), local = q.ranks_per_host, slice = n / local, g = model.gamma_s_per_byte;
  const double inside =
      2 * (local - 1) * (links.messages(slice) * model.intra.alpha_s + slice * model.intra.beta_s_per_byte) +
      (local - 1) * slice * g;
  const double h = links.hosts(), piece = slice / h;
  const LinkCost cross = links.ring(links.hosts(), links.hosts());
  const double across =
      2 * (h - 1) * (links.messages(piece) * cross.alpha_s + piece * local * cross.beta_s_per_byte) + (h - 1) * piece * g;
  return inside + across;
}

extern const AllreduceMethod hier_allreduce_method = {
    .name = "hier",
    .summary = "two-level: reduce-scatter inside each host, a ring across hosts per local rank, all-gather inside",
    .chunked = true,
    .segmented = true,
    .two_level = true,
    .options = kOptions,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<HierAllreduce>(comm, o);
    },
    .cost = hier_cost,
};

}  // namespace gradsync
