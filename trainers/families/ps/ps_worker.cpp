// The parameter server's workers (trainers/families/ps/ps_training.hpp): push the gradient's key ranges, pull the
// parameters'. The messages are the exchange the ps allreduce uses too (collectives/key_range_exchange.hpp); what is
// the trainer's own here is the compressed push and its residual, and the pipelined worker.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "collectives/key_range_exchange.hpp"
#include "collectives/watchdog.hpp"
#include "model/checkpoint.hpp"
#include "trace/scope.hpp"
#include "trainers/families/ps/ps_training.hpp"
#include "trainers/gradient_compression/compressed_push.hpp"
#include "trainers/overlap/comm_engine.hpp"

namespace gradsync {
namespace {

std::vector<ElementRange> key_ranges(const PsLayout& layout) {
  std::vector<ElementRange> ranges;
  for (int s = 0; s < layout.servers; ++s) ranges.push_back(layout.key_range(s));
  return ranges;
}

}  // namespace

// What both kinds of worker share: the exchange, and with compression the push's parts and residual. Outside the
// anonymous namespace: send_state_to_servers() below takes a Synchronizer that make_ps_worker made for one.
class PsWorkerBase : public Synchronizer {
 public:
  PsWorkerBase(Comm world, PsLayout layout, const TrainConfig& config, std::span<const LayerShape> layers)
      : exchange_(std::move(world), layout.servers, false), residual_tag_(exchange_.comm().reserve_tags(1)),
        layout_(layout) {
    if (!config.compression.enabled()) return;
    if (layers.empty()) throw std::invalid_argument("make_ps_worker: --compress needs the model's layers");
    push_ = std::make_unique<CompressedPush>(config.compression, layers, key_ranges(layout));
  }

  // The residual goes on a tag of its own, not as a push: the servers keep it in their checkpoint state, not their
  // model.
  void send_state() {
    if (!push_ || push_->residual().empty()) return;
    const std::span<float> r = push_->residual();
    for (int s = 0; s < layout_.servers; ++s) {
      const ElementRange key = layout_.key_range(s);
      exchange_.push_request(s) = world().isend(r.subspan(key.begin, key.size()), s, residual_tag_);
    }
    const WaitScope wait("MPI_Waitall (ps worker: residual to the servers for a checkpoint)");
    world().wait_all(exchange_.worker_requests(), "ps residual");
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
  // Every server's pull into `into` (the whole model) and push of `grads` (or of the prepared parts). Push and pull
  // are posted together: they use different buffers, and the server answers only after the push.
  void post(std::span<float> into, std::span<const float> grads) {
    exchange_.pull_ranges(into);
    if (!push_) return exchange_.push_ranges(grads);
    for (int s = 0; s < layout_.servers; ++s) exchange_.push(s, push_->part(static_cast<std::size_t>(s)));
  }
  // One server at a time, so that a watchdog report names the server that never answered.
  void wait_servers() {
    for (int s = 0; s < layout_.servers; ++s) {
      const TraceScope traced(SpanKind::push_pull, "push/pull (waiting for the server)", -1, s);
      const WaitScope wait("MPI_Waitall (ps worker: push gradient, pull parameters)", -1, s);
      world().wait_all(exchange_.requests_of(s), "ps push/pull");
    }
  }
  const Comm& world() const { return exchange_.comm(); }

  KeyRangeExchange exchange_;
  int residual_tag_;  // reserved right after the exchange's tags, on workers and servers alike
  PsLayout layout_;
  std::unique_ptr<CompressedPush> push_;
};

namespace {

class PsWorker final : public PsWorkerBase {
 public:
  using PsWorkerBase::PsWorkerBase;

  void step(std::span<float> params, std::span<float> grads) override {
    prepare(grads);
    post(params, grads);
    wait_servers();
  }
};

// Pipelined: the worker pushes step t's gradient and, instead of waiting for the parameters, computes step t+1's
// gradient on the ones it has; the pull lands in a buffer of its own (the pass is reading `params`) and is taken at
// the next step. The servers see the same pushes as from a blocking worker, in every mode.
class PipelinedPsWorker final : public PsWorkerBase, public PassObserver, public CommJob {
 public:
  PipelinedPsWorker(Comm world, PsLayout layout, const TrainConfig& config, std::span<const LayerShape> layers)
      : PsWorkerBase(std::move(world), layout, config, layers), pulled_(layout.parameter_count),
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
    post(pulled_, pushing_);
  }
  bool test() override {
    if (!world().test_all(exchange_.worker_requests(), "ps push/pull")) return false;
    trace_in_flight();
    return true;
  }
  void wait() override {
    for (int s = 0; s < layout_.servers; ++s) {
      const WaitScope wait("MPI_Waitall (ps worker: push gradient, pull parameters)", -1, s);
      world().wait_all(exchange_.requests_of(s), "ps push/pull");
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
                                             std::span<const LayerShape> layers) {
  if (config.pipeline) return std::make_unique<PipelinedPsWorker>(world, layout, config, layers);
  return std::make_unique<PsWorker>(world, layout, config, layers);
}

void send_state_to_servers(Synchronizer& worker) {
  auto* ps = dynamic_cast<PsWorkerBase*>(&worker);
  if (!ps) throw std::logic_error("send_state_to_servers: not a synchronizer that make_ps_worker made");
  ps->send_state();
}

}  // namespace gradsync
