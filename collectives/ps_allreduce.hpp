#pragma once
#include <cstdint>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/scratch_bytes.hpp"

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
  // std::invalid_argument. `name` ("ps" or "ps-sharded") is part of the agreement fingerprint: every rank must pass
  // the same. Reserves two tags on `comm` (Comm::reserve_tags). make_allreduce is the usual way in.
  PsAllreduce(Comm comm, AllreduceOptions options, std::string name);
  std::string_view name() const override { return name_; }
  bool contributes(int rank) const override;
  ElementRange result_range(int rank, std::size_t count) const override;

 private:
  // A trace outlives the object: a literal, not name_.
  const char* traced_method() const override { return name_ == "ps" ? "ps" : "ps-sharded"; }
  // The stages of one reduction, in order. Each blocking wait depends only on work that every rank has already
  // started: pushes are posted before serving (or two contributing servers would wait for each other's push), and a
  // server completes its result sends only after pulling its own result (or two servers would each wait, in a
  // rendezvous send, for the other to post its pull).
  enum class Phase : std::uint8_t {
    gather,   // server: the push of contributor `cursor_` has arrived; it is added in rank order
    push,     // contributor: the push to server `cursor_` has completed
    pull,     // contributor: the pull from server `cursor_` has completed
    results,  // server: every result send has completed
  };
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  // Sets stage_ for phase_ and cursor_.
  void set_stage();
  // Worker side: posts a nonblocking push or pull of every range another rank owns.
  void post_transfers(bool push);
  void post_gather();       // server: receives for every contributor's key range
  void add_part(int peer);  // server: folds contributor `peer`'s range into the sum
  void post_results();      // server: the summed range back to every contributor
  int next_contributor(int after) const;
  bool is_server(int rank) const { return rank < options_.servers; }

  std::string name_;
  int push_tag_, pull_tag_;
  ScratchBytes inbox_;                        // server: one key range per contributing peer; grows, never per call
  std::vector<MPI_Request> peer_requests_;    // server: one per peer, sized once
  std::vector<MPI_Request> server_requests_;  // worker: one per server, sized once
  // The reduction in flight.
  std::byte* data_ = nullptr;
  std::size_t count_ = 0;
  Dtype type_ = Dtype::f32;
  Phase phase_ = Phase::gather;
  int cursor_ = 0;
};

}  // namespace gradsync
