#include "trainers/ps/ps_training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "collectives/watchdog.hpp"
#include "model/checkpoint.hpp"
#include "trace/scope.hpp"
#include "trainers/compression/compressed_push.hpp"
#include "trainers/loop/clock.hpp"
#include "trainers/overlap/comm_engine.hpp"

namespace gradsync {

// The push and pull tags of the parameter server's traffic on its communicator. Every rank builds exactly one
// worker or one server on that communicator (Roles gives the parameter server one of its own), and each reserves
// its tags first thing, so a worker and a server hold the same tags. Outside the anonymous namespace because
// ParameterServer::Impl, which has external linkage, holds one.
struct PsTags {
  int push = 0, pull = 0, residual = 0;
};

namespace {

PsTags reserve_ps_tags(const Comm& comm) {
  const int first = comm.reserve_tags(3);
  return {first, first + 1, first + 2};
}

std::vector<ElementRange> key_ranges(const PsLayout& layout) {
  std::vector<ElementRange> ranges;
  for (int s = 0; s < layout.servers; ++s) ranges.push_back(layout.key_range(s));
  return ranges;
}

// What both kinds of worker share: the tags, and with compression the push's parts and residual.
class PsWorkerBase : public Synchronizer {
 public:
  PsWorkerBase(Comm world, PsLayout layout, const TrainConfig& config, const std::vector<std::size_t>& layer_sizes)
      : world_(std::move(world)), tags_(reserve_ps_tags(world_)), layout_(layout),
        requests_(2 * static_cast<std::size_t>(layout.servers)) {
    if (!config.compression.enabled()) return;
    if (layer_sizes.empty()) throw std::invalid_argument("make_ps_worker: --compress needs the model's layer sizes");
    push_ = std::make_unique<CompressedPush>(config.compression, layer_sizes, key_ranges(layout));
  }

  void send_state_to_servers() override {
    if (!push_ || push_->residual().empty()) return;
    const std::span<float> r = push_->residual();
    for (int s = 0; s < layout_.servers; ++s) {
      const ElementRange key = layout_.key_range(s);
      requests_[s] = world_.isend(r.subspan(key.begin, key.size()), s, tags_.residual);
    }
    const WaitScope wait("MPI_Waitall (ps worker: residual to the servers for a checkpoint)");
    world_.wait_all(std::span(requests_).first(static_cast<std::size_t>(layout_.servers)), "ps residual");
  }

  void load_state(std::span<const float> saved, int saved_workers, int index) override {
    const std::span<float> r = push_ ? push_->residual() : std::span<float>();
    if (saved.size() != r.size() * static_cast<std::size_t>(saved_workers))
      throw CheckpointError(fmt::format(
          "checkpoint: its workers' state holds {} values, but a compressed push on the checkpoint's {} workers "
          "keeps {}",
          saved.size(), saved_workers, r.size() * static_cast<std::size_t>(saved_workers)));
    std::fill(r.begin(), r.end(), 0.0f);
    if (index < saved_workers)
      std::copy_n(saved.begin() + static_cast<std::ptrdiff_t>(r.size() * static_cast<std::size_t>(index)), r.size(),
                  r.begin());
  }

 protected:
  // Encodes `grads` for the push, with compression (its parts are what post() sends).
  void prepare(std::span<const float> grads) {
    if (push_) push_->encode(grads);
  }
  // Server s's pull into `into` (the whole model) and push of `grads` (or of the prepared part).
  void post(int s, std::span<float> into, std::span<const float> grads) {
    const ElementRange key = layout_.key_range(s);
    requests_[2 * s] = world_.irecv(into.subspan(key.begin, key.size()), s, tags_.pull);
    requests_[2 * s + 1] = push_ ? world_.isend(push_->part(static_cast<std::size_t>(s)), s, tags_.push)
                                 : world_.isend(grads.subspan(key.begin, key.size()), s, tags_.push);
  }
  // One server at a time, so that a watchdog report names the server that never answered.
  void wait_servers() {
    for (int s = 0; s < layout_.servers; ++s) {
      const TraceScope traced(SpanKind::push_pull, "push/pull (waiting for the server)", -1, s);
      const WaitScope wait("MPI_Waitall (ps worker: push gradient, pull parameters)", -1, s);
      world_.wait_all(std::span(requests_).subspan(2 * static_cast<std::size_t>(s), 2), "ps push/pull");
    }
  }

  Comm world_;
  PsTags tags_;
  PsLayout layout_;
  std::vector<MPI_Request> requests_;
  std::unique_ptr<CompressedPush> push_;
};

class PsWorker final : public PsWorkerBase {
 public:
  using PsWorkerBase::PsWorkerBase;

  // Push and pull are posted together: they use different buffers, and the server answers only after the push.
  void step(std::span<float> params, std::span<float> grads) override {
    prepare(grads);
    for (int s = 0; s < layout_.servers; ++s) post(s, params, grads);
    wait_servers();
  }
};

// Pipelined: the worker pushes step t's gradient and, instead of waiting for the parameters, computes step t+1's
// gradient on the ones it has; the pull lands in a buffer of its own (the pass is reading `params`) and is taken at
// the next step. The servers see the same pushes as from a blocking worker, in every mode.
class PipelinedPsWorker final : public PsWorkerBase, public PassObserver, public CommJob {
 public:
  PipelinedPsWorker(Comm world, PsLayout layout, const TrainConfig& config, const std::vector<std::size_t>& layer_sizes)
      : PsWorkerBase(std::move(world), layout, config, layer_sizes), pulled_(layout.parameter_count),
        engine_(config.progress, 1) {}

  int gradient_buffers() const override { return 2; }
  PassObserver* observer(std::span<const float>, std::span<float>) override { return this; }
  void gradient_ready(std::size_t, std::size_t) override {}
  void between_kernels() override { engine_.poll(); }

  void step(std::span<float> params, std::span<float> grads) override {
    take_pull(params);
    prepare(grads);
    pushing_ = grads;
    engine_.enqueue(*this);
    pending_ = true;
  }
  void drain(std::span<float> params) override { take_pull(params); }
  double take_hidden_seconds() override { return std::exchange(hidden_s_, 0.0); }

  // CommJob: one push and one pull per server.
  void start() override {
    if (trace_recorder()) in_flight_since_s_ = trace_clock_s();
    for (int s = 0; s < layout_.servers; ++s) post(s, pulled_, pushing_);
  }
  bool test() override {
    if (!world_.test_all(requests_, "ps push/pull")) return false;
    trace_in_flight();
    return true;
  }
  void wait() override {
    for (int s = 0; s < layout_.servers; ++s) {
      const WaitScope wait("MPI_Waitall (ps worker: push gradient, pull parameters)", -1, s);
      world_.wait_all(std::span(requests_).subspan(2 * static_cast<std::size_t>(s), 2), "ps push/pull");
    }
    trace_in_flight();
  }

 private:
  // The push and pull from start() to completion, on the communication track.
  void trace_in_flight() const {
    TraceRecorder* t = trace_recorder();
    if (!t) return;
    Span s;
    s.kind = SpanKind::push_pull;
    s.track = Track::communication;
    s.name = "push/pull (in flight)";
    s.start_s = in_flight_since_s_;
    s.end_s = trace_clock_s();
    t->add(s);
  }

  void take_pull(std::span<float> params) {
    if (!pending_) return;
    const double blocked = engine_.wait_all();
    hidden_s_ += std::max(0.0, engine_.take_busy_seconds() - blocked);
    std::copy(pulled_.begin(), pulled_.end(), params.begin());
    pending_ = false;
  }

  std::vector<float> pulled_;  // the servers' parameters, taken at the next step
  CommEngine engine_;
  std::span<float> pushing_;  // the gradient in flight
  double in_flight_since_s_ = 0;
  bool pending_ = false;
  double hidden_s_ = 0;
};

}  // namespace

std::unique_ptr<Synchronizer> make_ps_worker(const Comm& world, const PsLayout& layout, const TrainConfig& config,
                                             const std::vector<std::size_t>& layer_sizes) {
  if (config.pipeline) return std::make_unique<PipelinedPsWorker>(world, layout, config, layer_sizes);
  return std::make_unique<PsWorker>(world, layout, config, layer_sizes);
}

class ParameterServer::Impl {
 public:
  Impl(const Comm& world, const Comm& servers, PsLayout layout, const TrainConfig& config, std::vector<float> master,
       std::span<const float> optimizer_state, const std::vector<std::size_t>& layer_sizes)
      : world_(world), servers_(servers), tags_(reserve_ps_tags(world_)), gather_tag_(servers_.reserve_tags(1)),
        layout_(layout), key_(layout.key_range(world.rank())), mode_(config.ps_mode),
        staleness_bound_(config.ps_mode == PsMode::ssp ? config.staleness : 0), sgd_(config.sgd, layout.parameter_count),
        master_(std::move(master)), inbox_(static_cast<std::size_t>(layout.workers) * key_.size()),
        requests_(static_cast<std::size_t>(layout.workers), MPI_REQUEST_NULL),
        clock_(static_cast<std::size_t>(layout.workers), 0),
        version_at_pull_(static_cast<std::size_t>(layout.workers), 0),
        waiting_(static_cast<std::size_t>(layout.workers), false) {
    if (master_.size() != layout.parameter_count ||
        (!optimizer_state.empty() && optimizer_state.size() != sgd_.state().size()))
      throw std::invalid_argument(
          fmt::format("ParameterServer: model of {} floats and optimizer state of {} for a "
                      "layout of {} parameters",
                      master_.size(), optimizer_state.size(), layout.parameter_count));
    if (!optimizer_state.empty()) std::copy(optimizer_state.begin(), optimizer_state.end(), sgd_.state().begin());
    if (!config.compression.enabled()) return;
    if (layer_sizes.empty()) throw std::invalid_argument("ParameterServer: --compress needs the model's layer sizes");
    decoder_.emplace(config.compression, layer_sizes, key_);
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

  void collect_worker_state() {
    if (state_.empty()) return;
    const std::size_t n = layout_.parameter_count, first = sgd_.state().size();
    for (int w = 0; w < layout_.workers; ++w)
      requests_[w] = world_.irecv(std::span(state_).subspan(first + w * n + key_.begin, key_.size()), worker_rank(w),
                                  tags_.residual);
    const WaitScope wait("MPI_Waitall (ps server: the workers' residuals for a checkpoint)");
    world_.wait_all(std::span(requests_).first(static_cast<std::size_t>(layout_.workers)), "ps residual");
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

  int worker_rank(int w) const { return layout_.servers + w; }
  float* slot(int w) { return inbox_.data() + static_cast<std::size_t>(w) * key_.size(); }
  std::span<float> my_master() { return {master_.data() + key_.begin, key_.size()}; }

  std::span<std::int32_t> part(int w) {
    return std::span(parts_).subspan(static_cast<std::size_t>(w) * decoder_->words(), decoder_->words());
  }
  void post_receive(int w) {
    requests_[w] = decoder_ ? world_.irecv(part(w), worker_rank(w), tags_.push)
                            : world_.irecv(std::span(slot(w), key_.size()), worker_rank(w), tags_.push);
  }
  // Worker w's gradient, arrived, into its slot (a compressed push decoded).
  void take(int w) {
    if (decoder_) decoder_->decode(part(w), {slot(w), key_.size()});
  }

  // Asynchronous modes: the next gradient changes the master copy, so each reply completes before it does.
  void reply(int w) {
    const WaitScope wait("MPI_Send (ps server: reply to a worker)", version_, worker_rank(w));
    world_.send(master_.data() + key_.begin, key_.size(), MPI_FLOAT, worker_rank(w), tags_.pull);
  }

  // One synchronous step: all gradients, summed in rank order, one update, everyone gets the same model.
  void serve_bsp_round(EpochWork& work) {
    if (TraceRecorder* t = trace_recorder()) t->set_step(round_);
    for (int w = 0; w < layout_.workers; ++w) post_receive(w);
    for (int w = 0; w < layout_.workers; ++w) {
      {
        const WaitScope wait("MPI_Wait (ps server: gradient from a worker)", round_, worker_rank(w));
        world_.wait(requests_[w], "ps push");
      }
      work.gradients_applied += 1;  // summed into this round's single update
      const double t = now_s();
      take(w);
      if (w > 0) add_into(slot(0), slot(w), key_.size());
      work.server_busy_s += now_s() - t;
    }
    const double t = now_s();
    const TraceScope traced(SpanKind::server_apply, "server apply (sum applied)");
    sgd_.step_range(my_master(), {slot(0), key_.size()}, key_.begin, 1.0f / static_cast<float>(layout_.workers));
    work.server_busy_s += now_s() - t;
    // All replies in flight at once (several sends may read one buffer); the master copy is not touched
    // again until they complete.
    for (int w = 0; w < layout_.workers; ++w) requests_[w] = world_.isend(my_master(), worker_rank(w), tags_.pull);
    {
      const WaitScope wait("MPI_Waitall (ps server: replies to the workers)", round_);
      world_.wait_all(std::span(requests_).first(static_cast<std::size_t>(layout_.workers)), "ps reply");
    }
    ++round_;
  }

  // Gradients applied one at a time, in arrival order. Under ssp a worker's reply (and so its next step) is
  // held back while it is more than staleness_bound_ steps ahead of the slowest worker.
  void serve_async(long steps, EpochWork& work) {
    const long target = clock_[0] + steps;  // all workers start the epoch at the same clock
    for (int w = 0; w < layout_.workers; ++w) post_receive(w);
    long outstanding = steps * layout_.workers;
    while (outstanding > 0) {
      const WaitScope wait("MPI_Waitany (ps server: next gradient from any worker)", version_);
      const int w = world_.wait_any(std::span(requests_).first(static_cast<std::size_t>(layout_.workers)), "ps push");
      if (TraceRecorder* t = trace_recorder()) t->set_step(version_ / layout_.workers);  // about the workers' step
      const double t = now_s();
      const TraceScope traced(SpanKind::server_apply, "server apply (one gradient)", -1, worker_rank(w));
      take(w);
      const double staleness = static_cast<double>(version_ - version_at_pull_[w]);
      work.staleness_sum += staleness;
      work.staleness_count += 1;
      work.staleness_max = std::max(work.staleness_max, staleness);
      const float per_worker = 1.0f / static_cast<float>(layout_.workers);
      sgd_.step_range(my_master(), {slot(w), key_.size()}, key_.begin, per_worker, per_worker);
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

  Comm world_;
  Comm servers_;
  PsTags tags_;
  int gather_tag_;  // on servers_: the shards of the final model, gathered on server 0
  PsLayout layout_;
  ElementRange key_;
  PsMode mode_;
  long staleness_bound_;
  Sgd sgd_;
  std::vector<float> master_;           // full size; this server updates only key_
  std::vector<float> inbox_;            // one key range per worker
  std::optional<PushDecoder> decoder_;  // with a compressed push
  std::vector<std::int32_t> parts_;     // with a compressed push: one part per worker, decoded into inbox_
  std::vector<float> state_;  // with error feedback: the optimizer's state, then each worker's residual (full-size)
  std::vector<MPI_Request> requests_;
  std::vector<long> clock_;            // gradients received from each worker
  std::vector<long> version_at_pull_;  // version_ when each worker last got parameters
  std::vector<bool> waiting_;          // worker pushed and waits for its reply
  long version_ = 0;                   // updates applied to this key range
  long round_ = 0;                     // bsp rounds served
};

ParameterServer::ParameterServer(const Comm& world, const Comm& servers, PsLayout layout, const TrainConfig& config,
                                 std::vector<float> master, std::span<const float> optimizer_state,
                                 const std::vector<std::size_t>& layer_sizes)
    : impl_(std::make_unique<Impl>(world, servers, layout, config, std::move(master), optimizer_state, layer_sizes)) {}
ParameterServer::~ParameterServer() = default;
EpochWork ParameterServer::serve(long steps) { return impl_->serve(steps); }
std::span<const float> ParameterServer::gather_model() { return impl_->gather_model(); }
std::span<const float> ParameterServer::gather_optimizer_state() { return impl_->gather_optimizer_state(); }
std::span<const float> ParameterServer::local_model() const { return impl_->local_model(); }
std::span<const float> ParameterServer::local_optimizer_state() { return impl_->local_optimizer_state(); }
void ParameterServer::collect_worker_state() { impl_->collect_worker_state(); }

}  // namespace gradsync
