#include "collectives/allreduce.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "collectives/agreement.hpp"
#include "collectives/mpi_allreduce.hpp"
#include "collectives/ps_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"

namespace gradsync {

// The options that shape the message pattern are part of the fingerprint: ranks that disagree on the chunk
// size or the server layout would exchange different numbers of messages and hang.
void Allreduce::run(void* data, std::size_t count, Dtype type) {
  if (options_.check_agreement) {
    if (plan_fingerprint_ == 0)
      plan_fingerprint_ = fingerprint_of_name(fmt::format("{}/{}/{}/{}", name(), options_.chunk_bytes, options_.servers,
                                                          options_.server_contributes));
    check_agreement(comm_, name(), {plan_fingerprint_, count, static_cast<std::uint64_t>(type), calls_});
  }
  ++calls_;
  require_supported(type);  // before the shortcuts below: a wrong type fails the same way on any communicator
  if (count == 0 || comm_.size() == 1) return;
  reduce(data, count, type);
}

bool Allreduce::contributes(int) const { return true; }

ElementRange Allreduce::result_range(int, std::size_t count) const { return {0, count}; }

const std::vector<std::string>& allreduce_methods() {
  static const std::vector<std::string> names = {"ring", "ps", "ps-sharded", "mpi", "ring-bf16"};
  return names;
}

std::unique_ptr<Allreduce> make_allreduce(std::string_view method, const Comm& comm, const AllreduceOptions& options) {
  if (method == "ring" || method == "ring-bf16") {
    AllreduceOptions o = options;
    o.bf16_wire = method == "ring-bf16";
    if (o.chunk_bytes == kAutoChunkBytes) o.chunk_bytes = comm.on_one_node() ? kSharedMemoryChunkBytes : kNetworkChunkBytes;
    return std::make_unique<RingAllreduce>(comm, o);
  }
  if (method == "mpi") return std::make_unique<MpiAllreduce>(comm, options);
  if (method == "ps" || method == "ps-sharded") {
    AllreduceOptions o = options;
    if (method == "ps") o.servers = 1;
    return std::make_unique<PsAllreduce>(comm, o, std::string(method));
  }
  throw std::invalid_argument(fmt::format("unknown allreduce method '{}' (choose from {})", method,
                                          fmt::join(allreduce_methods(), ", ")));
}

}  // namespace gradsync
