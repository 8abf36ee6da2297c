#pragma once
#include <cstdint>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/key_range_exchange.hpp"

namespace gradsync {

// Parameter-server reduction on point-to-point calls, in ps-lite's vocabulary. Ranks 0..k-1 are servers
// ("ps" is k = 1; "ps-sharded" takes k as its option kServersOption); server j owns key range j, the j-th of k
// contiguous slices of the buffer.
// Workers push each key range to its server and pull the summed range back; workers never talk to each other. The
// messages are the parameter server's exchange (collectives/key_range_exchange.hpp), which the trainer's parameter
// server (trainers/families/ps/) uses too; what is this method's own is the order of its stages.
// A server sums its range in rank order, so results are reproducible; with contributing servers the sum is
// also bit-identical for every k.
// Dedicated servers (the default) contribute nothing and end with only their own range of the result; with
// `server_contributes` (the methods' option kServerContributesOption) they also push their data and pull the whole
// result, like workers.
// On a single-rank communicator the rank is its own server and worker: the buffer is left as it is.
class PsAllreduce final : public Allreduce {
 public:
  // 1 <= servers < comm.size() (any servers >= 1 on a single rank, which serves itself), else
  // std::invalid_argument. `name` ("ps" or "ps-sharded") and options.own are part of the agreement fingerprint:
  // every rank must pass the same. Reserves the exchange's two tags on `comm` (Comm::reserve_tags). make_allreduce
  // is the usual way in.
  PsAllreduce(Comm comm, AllreduceOptions options, std::string name, int servers, bool server_contributes);
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
    gather,   // server: the push of pusher `cursor_` has arrived; it is added in rank order
    push,     // contributor: the push to server `cursor_` has completed
    pull,     // contributor: the pull from server `cursor_` has completed
    results,  // server: every result send has completed
  };
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  // Sets stage_ for phase_ and cursor_.
  void set_stage();
  void post_gather();  // server: receives for every contributor's key range
  std::byte* my_range() { return data_ + exchange_.key_range(count_, comm_.rank()).begin * dtype_size(type_); }
  std::size_t my_range_size() const { return exchange_.key_range(count_, comm_.rank()).size(); }

  std::string name_;
  KeyRangeExchange exchange_;
  // The reduction in flight.
  std::byte* data_ = nullptr;
  std::size_t count_ = 0;
  Dtype type_ = Dtype::f32;
  Phase phase_ = Phase::gather;
  int cursor_ = 0;
};

}  // namespace gradsync
