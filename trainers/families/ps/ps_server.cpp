// The parameter server's servers (trainers/families/ps/ps_training.hpp): each owns a key range of the master copy, takes
// every worker's push of it, applies the optimizer and answers with the parameters. The messages are the exchange
// the ps allreduce uses too (collectives/key_range_exchange.hpp), BSP's rank-order sum included; what is the
// trainer's own here is the optimizer, the staleness clocks of ASP and SSP, the compressed parts and the checkpoint
// state.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>

#include "collectives/key_range_exchange.hpp"
#include "collectives/watchdog.hpp"
#include "trace/scope.hpp"
#include "trainers/core/clock.hpp"
#include "trainers/core/fault_injection.hpp"
#include "trainers/families/ps/ps_options.hpp"
#include "trainers/families/ps/ps_training.hpp"
#include "trainers/gradient_compression/compressed_push.hpp"

namespace gradsync {

class ParameterServer::Impl {
 public:
  Impl(const Comm& world, const Comm& servers, PsLayout layout, const TrainConfig& config, std::vector<float> master,
       std::span<const float> optimizer_state, std::span<const LayerShape> layers, std::int64_t steps_done)
      : exchange_(world, layout.servers, false), residual_tag_(exchange_.comm().reserve_tags(1)), servers_(servers),
        gather_tag_(servers_.reserve_tags(1)), replica_tag_(servers_.reserve_tags(1)), layout_(layout),
        key_(layout.key_range(world.rank())), mode_(ps_options(config).mode),
        staleness_bound_(mode_ == PsMode::ssp ? ps_options(config).staleness : 0),
        sgd_(config.sgd, layout.parameter_count), master_(std::move(master)),
        clock_(static_cast<std::size_t>(layout.workers), 0),
        version_at_pull_(static_cast<std::size_t>(layout.workers), 0),
        waiting_(static_cast<std::size_t>(layout.workers), false), steps_done_(steps_done),
        faults_(config.faults, config.seed, world.rank(), world.size(), -1, layout.workers) {
    if (master_.size() != layout.parameter_count ||
        (!optimizer_state.empty() && optimizer_state.size() != sgd_.state().size()))
      throw std::invalid_argument(
          fmt::format("ParameterServer: model of {} floats and optimizer state of {} for a "
                      "layout of {} parameters",
                      master_.size(), optimizer_state.size(), layout.parameter_count));
    exchange_.plan_inbox(key_.size() * sizeof(float));
    if (!optimizer_state.empty()) std::copy(optimizer_state.begin(), optimizer_state.end(), sgd_.state().begin());
    if (mode_ == PsMode::bsp) plan_replicas(std::min(ps_options(config).replicas, layout.servers));
    if (!config.compression.enabled()) return;
    if (layers.empty()) throw std::invalid_argument("ParameterServer: --compress needs the model's layers");
    decoder_.emplace(config.compression, layers, key_);
    parts_.resize(static_cast<std::size_t>(layout.workers) * decoder_->words());
    if (config.compression.error_feedback)
      state_.resize(sgd_.state().size() + static_cast<std::size_t>(layout.workers) * layout.parameter_count);
  }

  EpochWork serve(long steps) {
    EpochWork work;
    const double start = now_s();
    if (mode_ == PsMode::bsp) {
      for (long s = 0; s < steps; ++s) serve_bsp_round(work);
    } else {
      serve_async(steps, work);
    }
    work.server_s = now_s() - start;
    return work;
  }

  std::span<const float> gather_model() { return gather(master_); }
  std::span<const float> gather_optimizer_state() { return gather(optimizer_state()); }
  std::span<const float> local_model() const { return master_; }
  std::span<const float> local_optimizer_state() { return optimizer_state(); }

  ServerLiveState live_state() const {
    if (mode_ != PsMode::bsp) return {};
    return {steps_done_ + round_, master_, sgd_.state(), round_ > 0, previous_master_, previous_state_};
  }

  void collect_worker_state() {
    if (state_.empty()) return;
    const std::size_t n = layout_.parameter_count, first = sgd_.state().size();
    for (int w = 0; w < layout_.workers; ++w)
      exchange_.pusher_request(w) = world().irecv(std::span(state_).subspan(first + w * n + key_.begin, key_.size()),
                                                  exchange_.pusher_rank(w), residual_tag_);
    const WaitScope wait("MPI_Waitall (ps server: the workers' residuals for a checkpoint)");
    world().wait_all(exchange_.pusher_requests(), "ps residual");
  }

 private:
  // The optimizer's state, then with a compressed push the workers' residuals as last collected.
  std::span<float> optimizer_state() {
    if (state_.empty()) return sgd_.state();
    std::ranges::copy(sgd_.state(), state_.begin());
    return state_;
  }

  // Server 0 collects every server's key range of each model-size block of `full` into its own copy.
  std::span<const float> gather(std::span<float> full) {
    if (full.empty()) return full;
    const int me = servers_.rank();
    const std::size_t n = layout_.parameter_count;
    const WaitScope wait("gather of the model shards to server 0");
    for (std::size_t block = 0; block < full.size(); block += n) {
      if (me != 0) {
        servers_.send(full.data() + block + key_.begin, key_.size(), MPI_FLOAT, 0, gather_tag_);
        continue;
      }
      for (int s = 1; s < layout_.servers; ++s) {
        const ElementRange key = layout_.key_range(s);
        servers_.recv(full.data() + block + key.begin, key.size(), MPI_FLOAT, s, gather_tag_);
      }
    }
    return me == 0 ? full : std::span<float>();
  }

  const Comm& world() const { return exchange_.comm(); }
  int worker_rank(int w) const { return exchange_.pusher_rank(w); }
  std::span<float> slot(int w) { return exchange_.slot_as<float>(w, key_.size()); }
  std::span<float> my_master() { return {master_.data() + key_.begin, key_.size()}; }

  std::span<std::int32_t> part(int w) {
    return std::span(parts_).subspan(static_cast<std::size_t>(w) * decoder_->words(), decoder_->words());
  }
  void post_receive(int w) {
    if (decoder_)
      exchange_.receive(w, part(w).data(), part(w).size(), MPI_INT32_T);
    else
      exchange_.receive_into_slot(w, key_.size(), Dtype::f32);
  }
  // Worker w's gradient, arrived, into its slot (a compressed push decoded).
  void take(int w) {
    if (decoder_) decoder_->decode(part(w), slot(w));
  }

  // Asynchronous modes: the next gradient changes the master copy, so each reply completes before it does.
  void reply(int w) {
    const WaitScope wait("MPI_Send (ps server: reply to a worker)", version_, worker_rank(w));
    exchange_.answer_now(w, master_.data() + key_.begin, key_.size(), MPI_FLOAT);
  }

  // BSP: the ranges this server holds (its own first, then those it replicates: held_[j] is server s-j's), a sum
  // buffer for each replicated one, and the state one round back.
  void plan_replicas(int replicas) {
    const int me = servers_.rank(), k = layout_.servers;
    held_.push_back(key_);
    std::size_t floats = 0;
    for (int j = 1; j < replicas; ++j) {
      held_.push_back(layout_.key_range((me - j + k) % k));
      floats += held_.back().size();
    }
    replica_sums_.resize(floats);
    replication_requests_.assign(2 * static_cast<std::size_t>(replicas - 1), MPI_REQUEST_NULL);
    previous_master_.resize(master_.size());
    previous_state_.resize(sgd_.state().size());
  }

  // Chain replication of one round: this range's sum to the servers that replicate it, theirs from the primaries of
  // the ranges this one replicates. Synchronous sends: once they complete, every replica holds the sum, so a worker
  // that pulls the update finds it on all of them.
  void replicate() {
    const int me = servers_.rank(), k = layout_.servers, replicas = static_cast<int>(held_.size());
    if (replicas == 1) return;
    const std::span<const float> mine = slot(0);
    std::size_t at = 0;
    for (int j = 1; j < replicas; ++j) {
      const std::size_t n = held_[static_cast<std::size_t>(j)].size();
      replication_requests_[2 * static_cast<std::size_t>(j - 1)] =
          servers_.irecv(std::span(replica_sums_).subspan(at, n), (me - j + k) % k, replica_tag_);
      replication_requests_[2 * static_cast<std::size_t>(j - 1) + 1] = servers_.issend(mine, (me + j) % k, replica_tag_);
      at += n;
    }
    const WaitScope wait("MPI_Waitall (ps server: chain replication of the round's sums)", round_);
    servers_.wait_all(replication_requests_, "ps replication");
  }

  // The round's update of every range this server holds, after keeping them as they were.
  void apply_held(float scale) {
    const std::span<float> state = sgd_.state();
    std::size_t at = 0;
    for (std::size_t j = 0; j < held_.size(); ++j) {
      const ElementRange r = held_[j];
      std::copy_n(master_.begin() + static_cast<std::ptrdiff_t>(r.begin), r.size(),
                  previous_master_.begin() + static_cast<std::ptrdiff_t>(r.begin));
      if (!state.empty())
        std::copy_n(state.begin() + static_cast<std::ptrdiff_t>(r.begin), r.size(),
                    previous_state_.begin() + static_cast<std::ptrdiff_t>(r.begin));
      const std::span<const float> sum =
          j == 0 ? std::span<const float>(slot(0)) : std::span<const float>(replica_sums_).subspan(at, r.size());
      if (j > 0) at += r.size();
      sgd_.step_range(std::span(master_).subspan(r.begin, r.size()), sum, r.begin, scale);
    }
  }

  // One synchronous step: all gradients, summed in rank order, one update, everyone gets the same model.
  void serve_bsp_round(EpochWork& work) {
    if (TraceRecorder* t = trace_recorder()) t->set_step(round_);
    faults_.on_step_start(steps_done_ + round_);
    for (int w = 0; w < layout_.workers; ++w) post_receive(w);
    for (int w = 0; w < layout_.workers; ++w) {
      {
        const WaitScope wait("MPI_Wait (ps server: gradient from a worker)", round_, worker_rank(w));
        world().wait(exchange_.pusher_request(w), "ps push");
      }
      work.gradients_applied += 1;  // summed into this round's single update
      const double t = now_s();
      take(w);
      exchange_.fold(w, reinterpret_cast<std::byte*>(slot(0).data()), key_.size(), Dtype::f32);
      work.server_busy_s += now_s() - t;
    }
    replicate();
    const double t = now_s();
    {
      const TraceScope traced(SpanKind::server_apply, "server apply (sum applied)");
      apply_held(1.0f / static_cast<float>(layout_.workers));
    }
    ++round_;  // the update is made: a failure from here on finds this range at the new step
    work.server_busy_s += now_s() - t;
    // All replies in flight at once (several sends may read one buffer); the master copy is not touched
    // again until they complete.
    exchange_.answer_all(my_master().data(), key_.size(), MPI_FLOAT);
    const WaitScope wait("MPI_Waitall (ps server: replies to the workers)", round_ - 1);
    world().wait_all(exchange_.pusher_requests(), "ps reply");
  }

  // Gradients applied one at a time, in arrival order. Under ssp a worker's reply (and so its next step) is
  // held back while it is more than staleness_bound_ steps ahead of the slowest worker.
  void serve_async(long steps, EpochWork& work) {
    const long target = clock_[0] + steps;  // all workers start the epoch at the same clock
    for (int w = 0; w < layout_.workers; ++w) post_receive(w);
    long outstanding = steps * layout_.workers;
    while (outstanding > 0) {
      const WaitScope wait("MPI_Waitany (ps server: next gradient from any worker)", version_);
      const int w = world().wait_any(exchange_.pusher_requests(), "ps push");
      if (TraceRecorder* t = trace_recorder()) t->set_step(version_ / layout_.workers);  // about the workers' step
      const double t = now_s();
      const TraceScope traced(SpanKind::server_apply, "server apply (one gradient)", -1, worker_rank(w));
      take(w);
      const double staleness = static_cast<double>(version_ - version_at_pull_[w]);
      work.staleness_sum += staleness;
      work.staleness_count += 1;
      work.staleness_max = std::max(work.staleness_max, staleness);
      const float per_worker = 1.0f / static_cast<float>(layout_.workers);
      sgd_.step_range(my_master(), slot(w), key_.begin, per_worker, per_worker);
      ++version_;
      ++clock_[w];
      work.gradients_applied += 1;
      --outstanding;
      work.server_busy_s += now_s() - t;
      if (clock_[w] < target) post_receive(w);
      waiting_[w] = true;
      release_waiting(work);
    }
  }

  void release_waiting(EpochWork& work) {
    const long slowest = *std::min_element(clock_.begin(), clock_.end());
    for (int w = 0; w < layout_.workers; ++w) {
      if (!waiting_[w]) continue;
      if (mode_ == PsMode::ssp && clock_[w] - slowest > staleness_bound_) continue;
      work.clock_gap_max = std::max(work.clock_gap_max, static_cast<double>(clock_[w] - slowest));
      waiting_[w] = false;
      version_at_pull_[w] = version_;
      reply(w);
    }
  }

  KeyRangeExchange exchange_;  // its inbox holds one key range per worker
  int residual_tag_;           // reserved right after the exchange's tags, on workers and servers alike
  Comm servers_;
  int gather_tag_;   // on servers_: the shards of the final model, gathered on server 0
  int replica_tag_;  // on servers_: the round's sums, to the replicas
  PsLayout layout_;
  ElementRange key_;
  PsMode mode_;
  long staleness_bound_;
  Sgd sgd_;
  std::vector<float> master_;           // full size; this server updates only key_
  std::optional<PushDecoder> decoder_;  // with a compressed push
  std::vector<std::int32_t> parts_;     // with a compressed push: one part per worker, decoded into the inbox
  std::vector<float> state_;  // with error feedback: the optimizer's state, then each worker's residual (full-size)
  std::vector<long> clock_;   // gradients received from each worker
  std::vector<long> version_at_pull_;  // version_ when each worker last got parameters
  std::vector<bool> waiting_;          // worker pushed and waits for its reply
  long version_ = 0;                   // updates applied to this key range
  long round_ = 0;                     // bsp rounds applied
  std::int64_t steps_done_;            // global steps before this server's first round
  FaultHook faults_;                   // --inject-kill of a server rank, at a round's start
  // BSP: the ranges held (own first, then the replicated ones, held_[j] that of server s-j), the replicated ranges'
  // sums of a round, end to end, their requests (receive, synchronous send, per replica), and each held range as it
  // was before the last update.
  std::vector<ElementRange> held_;
  std::vector<float> replica_sums_;
  std::vector<MPI_Request> replication_requests_;
  std::vector<float> previous_master_, previous_state_;
};

ParameterServer::ParameterServer(const Comm& world, const Comm& servers, PsLayout layout, const TrainConfig& config,
                                 std::vector<float> master, std::span<const float> optimizer_state,
                                 std::span<const LayerShape> layers, std::int64_t steps_done)
    : impl_(std::make_unique<Impl>(world, servers, layout, config, std::move(master), optimizer_state, layers,
                                   steps_done)) {}
ParameterServer::~ParameterServer() = default;
EpochWork ParameterServer::serve(long steps) { return impl_->serve(steps); }
std::span<const float> ParameterServer::gather_model() { return impl_->gather_model(); }
std::span<const float> ParameterServer::gather_optimizer_state() { return impl_->gather_optimizer_state(); }
std::span<const float> ParameterServer::local_model() const { return impl_->local_model(); }
std::span<const float> ParameterServer::local_optimizer_state() { return impl_->local_optimizer_state(); }
void ParameterServer::collect_worker_state() { impl_->collect_worker_state(); }
ServerLiveState ParameterServer::live_state() const { return impl_->live_state(); }

}  // namespace gradsync
