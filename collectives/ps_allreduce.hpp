#pragma once
#include <vector>

#include "collectives/allreduce.hpp"

namespace gradsync {

// Parameter-server reduction on point-to-point calls, in ps-lite's vocabulary. Ranks 0..k-1 are servers
// (k = options.servers; "ps" is k = 1); server j owns key range j, the j-th of k contiguous slices of the buffer.
// Workers push each key range to its server and pull the summed range back; workers never talk to each other.
// A server sums its range in rank order, so results are reproducible; with contributing servers the sum is
// also bit-identical for every k.
// Dedicated servers (the default) contribute nothing and end with only their own range of the result; with
// options.server_contributes they also push their data and pull the whole result, like workers.
// On a single-rank communicator the rank is its own server and worker: the buffer is left as it is.
class PsAllreduce final : public Allreduce {
 public:
  // 1 <= options.servers < comm.size() (any servers >= 1 on a single rank, which serves itself), else
  // std::invalid_argument. `name` ("ps" or
  // "ps-sharded") is part of the agreement fingerprint: every rank must pass the same. make_allreduce is the
  // usual way in.
  PsAllreduce(Comm comm, AllreduceOptions options, std::string name);
  std::string_view name() const override { return name_; }
  bool contributes(int rank) const override;
  ElementRange result_range(int rank, std::size_t count) const override;

 private:
  void reduce(void* data, std::size_t count, Dtype type) override;
  void serve(std::byte* data, std::size_t count, Dtype type);  // server side of one reduction
  // Worker side: starts a nonblocking push (tag push) or pull (tag pull) of every range another rank owns.
  void start_transfers(std::byte* data, std::size_t count, Dtype type, int tag);
  void finish_transfers(const char* what);
  bool is_server(int rank) const { return rank < options_.servers; }

  std::string name_;
  std::vector<std::byte> inbox_;        // server: one key range per contributing peer; grows, never per call
  std::vector<MPI_Request> peer_requests_;    // server: one per peer, sized once
  std::vector<MPI_Request> server_requests_;  // worker: one per server, sized once
};

}  // namespace gradsync
