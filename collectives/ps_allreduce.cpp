#include "collectives/ps_allreduce.hpp"
#include "collectives/allreduce_method.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gradsync {
PsAllreduce::PsAllreduce(Comm comm, AllreduceOptions options, std::string name, int servers, bool server_contributes)
    : Allreduce(std::move(comm), options), name_(std::move(name)),
      exchange_(comm_, std::max(servers, 1), server_contributes || comm_.size() == 1) {
  if (servers < 1 || (comm_.size() > 1 && servers >= comm_.size()))
    throw std::invalid_argument(fmt::format("{}: {} server rank(s) need at least {} ranks, the communicator has {}",
                                            name_, servers, servers + 1, comm_.size()));
}

bool PsAllreduce::contributes(int rank) const { return exchange_.pushes(rank); }

ElementRange PsAllreduce::result_range(int rank, std::size_t count) const {
  if (contributes(rank)) return {0, count};
  return exchange_.key_range(count, rank);
}

void PsAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  data_ = data;
  count_ = count;
  type_ = type;
  const int me = comm_.rank();
  if (contributes(me)) exchange_.push_ranges(data_, count_, type_);
  if (exchange_.is_server(me)) {
    post_gather();
    phase_ = Phase::gather;
  } else {
    phase_ = Phase::push;
  }
  cursor_ = 0;
  set_stage();
}

bool PsAllreduce::advance() {
  const int me = comm_.rank(), k = exchange_.servers();
  switch (phase_) {
    case Phase::gather:
      exchange_.fold(cursor_, my_range(), my_range_size(), type_);
      if (++cursor_ < exchange_.pushers()) break;
      exchange_.answer_all(my_range(), my_range_size(), mpi_type(type_));
      phase_ = contributes(me) ? Phase::push : Phase::results;
      cursor_ = 0;
      break;
    case Phase::push:
      if (++cursor_ < k) break;
      exchange_.pull_ranges(data_, count_, type_);  // the push buffers are free now: the pull overwrites them
      phase_ = Phase::pull;
      cursor_ = 0;
      break;
    case Phase::pull:
      if (++cursor_ < k) break;
      if (!exchange_.is_server(me)) return true;
      phase_ = Phase::results;
      break;
    case Phase::results: return true;
  }
  set_stage();
  return false;
}

// One request per stage while gathering, pushing and pulling, so that a watchdog report names the peer that never
// answered. Each blocking wait depends only on work that every rank has already started: pushes are posted before
// serving (or two contributing servers would wait for each other's push), and a server completes its result sends
// only after pulling its own result (or two servers would each wait, in a rendezvous send, for the other to post its
// pull).
void PsAllreduce::set_stage() {
  switch (phase_) {
    case Phase::gather: {
      const int peer = exchange_.pusher_rank(cursor_);
      stage_ = {
          peer == comm_.rank() ? std::span<MPI_Request>{} : std::span<MPI_Request>{&exchange_.pusher_request(cursor_), 1},
          "ps server: receiving a push", peer};
      return;
    }
    case Phase::push: stage_ = {{&exchange_.push_request(cursor_), 1}, "ps worker: push", cursor_}; return;
    case Phase::pull: stage_ = {{&exchange_.pull_request(cursor_), 1}, "ps worker: pull", cursor_}; return;
    case Phase::results: stage_ = {exchange_.pusher_requests(), "ps server: sending results"}; return;
  }
}

// Receives the key range from every contributing peer at once (the network may deliver them concurrently); the
// stages then add them in rank order as each arrives. Our own range, when we contribute, waits in our inbox slot
// for its turn; the sum accumulates in place in our key range of the buffer.
void PsAllreduce::post_gather() {
  const int me = comm_.rank();
  const std::size_t n = my_range_size(), bytes = n * dtype_size(type_);
  exchange_.plan_inbox(bytes);
  for (int i = 0; i < exchange_.pushers(); ++i) {
    exchange_.pusher_request(i) = MPI_REQUEST_NULL;
    if (exchange_.pusher_rank(i) != me)
      exchange_.receive_into_slot(i, n, type_);
    else if (bytes > 0)  // an empty key range (count < servers) still takes part, but memcpy must not see null
      std::memcpy(exchange_.slot(i), my_range(), bytes);
  }
}

namespace {

constexpr MethodOption kServers{kServersOption, "server ranks (ranks 0..servers-1), below the communicator's size", 1, 1};
constexpr MethodOption kContributes{kServerContributesOption, "1: the servers add their own buffer too, like workers", 0,
                                    0, 1};
constexpr MethodOption kCentralOptions[] = {kContributes};
constexpr MethodOption kShardedOptions[] = {kServers, kContributes};

}  // namespace

extern const AllreduceMethod ps_allreduce_method = {
    .name = "ps",
    .summary = "central parameter server on rank 0: workers push, the server sums in rank order and sends back",
    .servers = ServerRanks::one,
    .options = kCentralOptions,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<PsAllreduce>(comm, o, "ps", 1, option_value(o.own, kContributes) != 0);
    },
};

extern const AllreduceMethod ps_sharded_allreduce_method = {
    .name = "ps-sharded",
    .summary = "parameter server sharded over ranks 0..servers-1, each owning a key range",
    .servers = ServerRanks::some,
    .options = kShardedOptions,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<PsAllreduce>(comm, o, "ps-sharded", static_cast<int>(option_value(o.own, kServers)),
                                           option_value(o.own, kContributes) != 0);
    },
};

}  // namespace gradsync
