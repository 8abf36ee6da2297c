// --sync gossip --compress NAME: CHOCO-SGD (Koloskova, Stich and Jaggi, ICML 2019, Algorithm 2). Beside its model
// x_i, every worker has a public copy xhat_i of it: the sum of the compressed differences it has sent, which is all
// its neighbours know of its model. A step sends q_i = Q(x_i - xhat_i), the compressor's part (compression/
// part_codec.hpp), to each neighbour in --topology, and then
//   xhat_j <- xhat_j + q_j  for j = i and each neighbour,   x_i <- x_i + gamma sum_j w_ij (xhat_j - xhat_i) - lr u_i
// where u_i is the optimizer's update from the gradient and gamma --gossip-gamma. What q_i leaves out stays in
// x_i - xhat_i and goes out in later steps, so the public copy does what error feedback does for gradients.
//
// Memory: the step reads the neighbours' copies only through d_i = sum_j (xhat_j - xhat_i) over the neighbours, which is
// linear in them; so a worker keeps xhat_i and d_i (two vectors, whatever its degree) and updates d_i by
// sum_j q_j - degree q_i. Every topology gives a rank and its neighbours one weight w (collectives/topology.hpp), so
// the sum above is w d_i; the constructor checks that.
//
// Order: as in the authors' deep-learning code (ParallelCHOCO, epfml/ChocoSGD) and as D-PSGD here (gossip.cpp), q_i
// is formed from the model the step starts from and goes out before the backward pass, and u_i comes from the
// gradient at that model; Algorithm 2 as printed takes the gradient step first and compresses its result, which
// would leave the exchange nothing to overlap. With Q the identity (topk:1) and gamma = 1 the exchange leaves
// xhat_j = x_j, so the step is x_i <- sum_j w_ij x_j - lr u_i: D-PSGD's, which the tests hold it to.
#include "trainers/families/gossip/choco_gossip.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "collectives/agreement.hpp"
#include "collectives/topology.hpp"
#include "collectives/watchdog.hpp"
#include "compression/compressors.hpp"
#include "model/checkpoint.hpp"
#include "trainers/checkpoint/checkpointing.hpp"
#include "trainers/checkpoint/replicas.hpp"
#include "trainers/config/train_config.hpp"
#include "trainers/core/divergence.hpp"
#include "trainers/families/gossip/gossip_options.hpp"

namespace gradsync {
namespace {

constexpr const char* kExchange = "CHOCO-SGD exchange with the neighbours";

// This rank's neighbours on `workers`, the same at every step, with one weight for itself and each of them.
Neighbourhood fixed_neighbourhood(Topology topology, const Comm& workers) {
  if (topology_period(topology, workers.size()) != 1)
    throw std::invalid_argument("CHOCO-SGD: the topology's neighbours change from step to step");
  Neighbourhood n = neighbourhood(topology, workers.size(), workers.rank(), 0);
  for (const Peer& peer : n.peers)
    if (peer.weight != n.self_weight)
      throw std::logic_error(
          "CHOCO-SGD: keeps sum_j (xhat_j - xhat_i) alone, which needs one weight for a rank and its neighbours");
  return n;
}

class ChocoGossipSgd final : public Synchronizer, public PassObserver {
 public:
  ChocoGossipSgd(const Comm& workers, const TrainConfig& config, Sgd& sgd, std::unique_ptr<PartCodec> codec,
                 std::size_t count);

  bool keeps_replicas() const override { return true; }
  // The difference of the model this step starts from goes out before the pass and moves on between its kernels.
  PassObserver* observer(std::span<const float> params, std::span<float>) override {
    start(params);
    return this;
  }
  void gradient_ready(std::size_t, std::size_t) override {}
  void between_kernels() override { test(); }
  void step(std::span<float> params, std::span<float> grads) override;

  // Collective over the workers in a fresh run (it asks whether they all start from one model).
  void start_from(std::span<float> params) override;
  std::size_t state_size() const override { return replicas_.state_size() + choco_state_size(count_, workers_.size()); }
  void save_state(std::span<float> out) override;
  void load_state(std::span<const float> saved, int saved_workers, int index) override;

 private:
  void start(std::span<const float> params);
  void test();
  void wait();
  void update_public_copies();
  std::span<std::int32_t> inbox(std::size_t peer) { return std::span(inbox_).subspan(peer * part_.size(), part_.size()); }

  const Comm& workers_;
  Sgd& sgd_;
  std::size_t count_;
  float gamma_;
  Neighbourhood neighbours_;
  std::unique_ptr<PartCodec> codec_;
  int tag_;
  Replicas replicas_;
  // xhat_i, then d_i: the worker's training state beside its model (checkpointed).
  std::vector<float> public_;
  std::vector<float> difference_, sent_;  // x_i - xhat_i, and q_i as its receivers add it up (the encoder's)
  std::vector<std::int32_t> part_;        // q_i on the wire
  std::vector<std::int32_t> inbox_;       // the neighbours' parts, one after another
  std::vector<MPI_Request> requests_;
  std::vector<float> pending_;  // a resumed worker's own xhat_i and d_i, until start_from
  bool started_ = false;        // this step's exchange was started
  bool in_flight_ = false;      // and has not completed yet
};

ChocoGossipSgd::ChocoGossipSgd(const Comm& workers, const TrainConfig& config, Sgd& sgd, std::unique_ptr<PartCodec> codec,
                               std::size_t count)
    : workers_(workers), sgd_(sgd), count_(count), gamma_(gossip_options(config).gamma),
      neighbours_(fixed_neighbourhood(gossip_options(config).topology, workers)), codec_(std::move(codec)),
      tag_(workers.reserve_tags(1)), replicas_(workers, sgd, count), public_(2 * count, 0.0f), difference_(count),
      sent_(count), part_(codec_->words()), inbox_(neighbours_.peers.size() * part_.size()) {
  check_agreement(workers, "CHOCO-SGD exchange",
                  {.method = fingerprint_of_name(fmt::format("choco {} {} gamma {}",
                                                             topology_info(gossip_options(config).topology).name,
                                                             config.compression.name(), gamma_)),
                   .count = part_.size(),
                   .dtype = static_cast<std::uint64_t>(Dtype::i32),
                   .sequence = count});
  requests_.reserve(2 * neighbours_.peers.size());
}

void ChocoGossipSgd::start(std::span<const float> params) {
  if (in_flight_) throw std::logic_error("CHOCO-SGD: a step's exchange started before the last one was waited for");
  const float* hat = public_.data();
  for (std::size_t k = 0; k < count_; ++k) difference_[k] = params[k] - hat[k];
  // The loop checks the gradient only after the pass; a compressor would meet a diverged model first (top-k's
  // ordering of NaNs is undefined).
  if (!all_finite(difference_))
    throw DivergenceError(
        fmt::format("training diverged: NaN/Inf in the model on worker {} (its difference to CHOCO-SGD's public copy)",
                    workers_.rank()));
  codec_->encode(difference_, sent_, part_);
  requests_.clear();
  for (std::size_t i = 0; i < neighbours_.peers.size(); ++i)
    requests_.push_back(workers_.irecv(inbox(i), neighbours_.peers[i].rank, tag_));
  for (const Peer& peer : neighbours_.peers)
    requests_.push_back(workers_.isend(std::span<const std::int32_t>(part_), peer.rank, tag_));
  started_ = in_flight_ = true;
}

void ChocoGossipSgd::test() {
  if (in_flight_ && workers_.test_all(requests_, kExchange)) in_flight_ = false;
}

void ChocoGossipSgd::wait() {
  if (!in_flight_) return;
  const WaitScope waiting(kExchange);
  workers_.wait_all(requests_, kExchange);
  in_flight_ = false;
}

// xhat_i += q_i; d_i += sum_j q_j - degree q_i.
void ChocoGossipSgd::update_public_copies() {
  float* hat = public_.data();
  float* disagreement = hat + count_;
  const auto degree = static_cast<float>(neighbours_.peers.size());
  for (std::size_t k = 0; k < count_; ++k) {
    hat[k] += sent_[k];
    disagreement[k] -= degree * sent_[k];
  }
  const std::span<float> d(disagreement, count_);
  for (std::size_t i = 0; i < neighbours_.peers.size(); ++i) codec_->add_part(inbox(i), d);
}

void ChocoGossipSgd::step(std::span<float> params, std::span<float> grads) {
  if (!started_) start(params);  // a caller that computed the gradient without observer()
  wait();
  update_public_copies();
  const float move = gamma_ * static_cast<float>(neighbours_.self_weight);
  const float* disagreement = public_.data() + count_;
  for (std::size_t k = 0; k < count_; ++k) params[k] += move * disagreement[k];
  sgd_.step(params, grads);
  started_ = false;
}

void ChocoGossipSgd::start_from(std::span<float> params) {
  replicas_.start_from(params);
  if (!pending_.empty()) {
    std::ranges::copy(pending_, public_.begin());
    pending_.clear();
    return;
  }
  // Workers that all start from one model (a fresh run's: every rank draws it from the seed) know each other's
  // public copy to be that model, and d_i = 0 is exact: the first parts then carry the updates alone, where copies
  // from zero would spend the first steps sending the model itself. Otherwise they start at zero, as in the paper.
  const auto crc = static_cast<std::int64_t>(crc32_floats(params));
  if (workers_.min(crc) == workers_.max(crc)) std::ranges::copy(params, public_.begin());
}

// Gossip's replicas (every worker's model and optimizer state), then every worker's xhat_i and d_i.
void ChocoGossipSgd::save_state(std::span<float> out) {
  const std::size_t replicas = replicas_.state_size();
  replicas_.save(out.first(replicas));
  std::ranges::copy(workers_.all_gather(public_), out.begin() + static_cast<std::ptrdiff_t>(replicas));
}

void ChocoGossipSgd::load_state(std::span<const float> saved, int saved_workers, int index) {
  const std::size_t replicas = replicas_.state_size();
  if (saved_workers != workers_.size() || saved.size() != state_size())
    throw CheckpointError(fmt::format(
        "checkpoint: each worker of this run keeps its own model and CHOCO-SGD's public copy ({} values on {} "
        "worker(s)), and the checkpoint holds {} values of {} worker(s): one model per worker, from a run with "
        "or without --compress; resume it on as many workers, with --compress as it was",
        state_size(), workers_.size(), saved.size(), saved_workers));
  replicas_.load(saved.first(replicas), saved_workers, index);
  const auto own =
      saved.begin() + static_cast<std::ptrdiff_t>(replicas + public_.size() * static_cast<std::size_t>(index));
  pending_.assign(own, own + static_cast<std::ptrdiff_t>(public_.size()));
}

// The topologies whose neighbours stay the same on `workers` workers, for messages.
std::string fixed_topologies(int workers) {
  std::string names;
  for (const TopologyInfo& t : topology_table())
    if (topology_period(t.id, workers) == 1) names += fmt::format("{}{}", names.empty() ? "" : ", ", t.name);
  return names;
}

}  // namespace

std::string check_choco_compression(const TrainConfig& c) {
  const CompressionChoice& choice = c.compression;
  if (!choice.compressor->make_codec)
    return fmt::format(
        "--compress {}: not with --sync gossip: CHOCO-SGD sends each worker's own compressed difference to its "
        "neighbours, a part that {} write; this compressor's factors are sums over every worker, formed by an "
        "allreduce",
        choice.name(), codec_compressor_names());
  if (gossip_options(c).async)
    return fmt::format(
        "--compress {}: not with --async: CHOCO-SGD's public copies need every neighbour to add the same "
        "compressed differences each step, which pairs averaging whole models whenever they meet do not",
        choice.name());
  if (choice.error_feedback_given)
    return "--error-feedback: not with --sync gossip --compress: CHOCO-SGD keeps no residual; what a step's "
           "compression leaves out stays in the difference to the public copy and goes out later";
  return {};
}

std::string check_choco_run(const TrainConfig& c, int workers) {
  const GossipOptions& g = gossip_options(c);
  if (!(g.gamma > 0 && g.gamma <= 1)) return fmt::format("--gossip-gamma: must be in (0, 1], got {}", g.gamma);
  if (workers > 0 && topology_period(g.topology, workers) != 1)
    return fmt::format(
        "--topology {}: not with --compress: its neighbours change from step to step on {} workers, and CHOCO-SGD "
        "keeps the public copies of fixed neighbours (each would have to hear every change of every peer of a "
        "period); take a fixed graph ({})",
        topology_info(g.topology).name, workers, fixed_topologies(workers));
  return {};
}

std::size_t choco_state_size(std::size_t parameter_count, int workers) {
  return 2 * parameter_count * static_cast<std::size_t>(workers);
}

std::unique_ptr<Synchronizer> make_choco_gossip(const TrainConfig& config, const SyncSetup& s) {
  if (s.layers.empty()) throw std::invalid_argument("make_choco_gossip: needs the model's layers (the tensors)");
  const CompressionChoice& choice = config.compression;
  std::unique_ptr<PartCodec> codec = choice.compressor->make_codec(choice.param, model_tensors(s.layers));
  return std::make_unique<ChocoGossipSgd>(s.workers, config, s.sgd, std::move(codec), s.parameter_count);
}

}  // namespace gradsync
