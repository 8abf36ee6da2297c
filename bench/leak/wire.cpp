#include "bench/leak/wire.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "collectives/bf16.hpp"
#include "collectives/methods.hpp"
#include "compression/compressors.hpp"
#include "model/rng.hpp"
#include "model/sgd.hpp"
#include "privacy/gaussian_noise.hpp"
#include "privacy/pair_keys.hpp"
#include "privacy/secure_aggregator.hpp"

namespace gradsync::bench {
namespace {

struct WireName {
  const char* name;
  WireKind kind;
  bool param;
};
constexpr WireName kWires[] = {{"plain", WireKind::plain, false},      {"bf16", WireKind::bf16, false},
                               {"topk", WireKind::topk, true},         {"sign", WireKind::sign, false},
                               {"powersgd", WireKind::powersgd, true}, {"dp", WireKind::dp, true},
                               {"masked", WireKind::masked, false},    {"masked-sum", WireKind::masked_sum, true},
                               {"fedavg", WireKind::fedavg, true}};

// What the compressor `name` (topk, sign, powersgd) makes of `grads` as the other workers decode it: its `mine`
// after the first exchange (error feedback's residual is still zero, so its input is the gradient itself), on a
// communicator of this rank alone.
std::vector<float> compressed(const std::string& name, double param, const Model& model, std::span<const float> grads,
                              std::uint64_t seed) {
  const CompressorInfo* info = find_compressor(name);
  if (!info) throw std::invalid_argument(fmt::format("no compressor '{}' (known: {})", name, compressor_names()));
  const std::vector<Tensor> tensors = model_tensors(model.layers());
  if (info->check_model)
    if (const std::string why = info->check_model(param, tensors); !why.empty()) throw std::invalid_argument(why);
  const Comm self(MPI_COMM_SELF);
  const CompressorSetup setup{self, find_allreduce_method("mpi"), {}, tensors, param, seed};
  const std::unique_ptr<Compressor> c = info->make(setup);
  std::vector<float> mine(grads.size()), sum(grads.size());
  c->exchange(grads, mine, sum);
  return mine;
}

// A client's update after `epochs` local epochs of SGD over its examples from `params`: params - local model, which
// is lr times the sum of its local gradients (what it sends to the server in federated averaging).
std::vector<float> fedavg_update(const WireSettings& s, int epochs, const Model& model, std::span<const float> params,
                                 const Dataset& data, std::span<const std::uint32_t> indices, Batch& batch,
                                 Workspace& ws) {
  std::vector<float> local(params.begin(), params.end()), grads(params.size());
  std::vector<std::uint32_t> order(indices.begin(), indices.end());
  const std::size_t b = std::clamp<std::size_t>(s.local_batch, 1, order.size());
  Sgd sgd(SgdOptions{.lr = s.lr}, params.size());
  Rng rng(s.seed ^ 0xFEDA66ULL);
  for (int e = 0; e < epochs; ++e) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    for (std::size_t first = 0; first < order.size(); first += b) {
      const std::size_t n = std::min(b, order.size() - first);
      gather_batch(data, std::span(order).subspan(first, n), batch, true);
      model.loss_and_gradient(local, batch, grads, ws);
      sgd.step(local, grads);
    }
  }
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = params[i] - local[i];
  gather_batch(data, indices, batch, true);  // leave the caller's batch as it was
  return local;
}

}  // namespace

std::optional<Wire> parse_wire(const std::string& text, std::string& problem) {
  const std::size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  for (const WireName& w : kWires) {
    if (name != w.name) continue;
    Wire wire{.kind = w.kind, .text = text};
    if (!w.param) {
      if (colon == std::string::npos) return wire;
      problem = fmt::format("wire '{}' takes no parameter", name);
      return std::nullopt;
    }
    const std::string value = colon == std::string::npos ? "" : text.substr(colon + 1);
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), wire.param);
    if (value.empty() || ec != std::errc{} || end != value.data() + value.size() || !(wire.param >= 0)) {
      problem = fmt::format("wire '{}' needs a number >= 0: {}:VALUE", text, name);
      return std::nullopt;
    }
    const bool whole = wire.param == std::floor(wire.param) && wire.param >= 1;
    if ((w.kind == WireKind::powersgd || w.kind == WireKind::fedavg || w.kind == WireKind::masked_sum) && !whole) {
      problem = fmt::format("wire '{}' needs a whole number >= 1", text);
      return std::nullopt;
    }
    if (w.kind == WireKind::topk && !(wire.param > 0 && wire.param <= 1)) {
      problem = fmt::format("wire '{}': F is a fraction in (0, 1]", text);
      return std::nullopt;
    }
    return wire;
  }
  problem = fmt::format(
      "unknown wire '{}' (plain, bf16, topk:F, sign, powersgd:R, dp:SIGMA, masked, masked-sum:P, "
      "fedavg:E)",
      text);
  return std::nullopt;
}

std::vector<float> wire_vector(const Wire& wire, const WireSettings& s, const Model& model, std::span<const float> params,
                               const Dataset& data, std::span<const std::uint32_t> indices, Batch& batch, Workspace& ws,
                               const Comm& world) {
  std::vector<float> grads(model.parameter_count());
  if (wire.kind == WireKind::fedavg)
    return fedavg_update(s, static_cast<int>(wire.param), model, params, data, indices, batch, ws);
  if (wire.kind == WireKind::dp) {
    model.clipped_loss_and_gradient(params, batch, grads, ws, s.dp_clip, {});
    // The trainer's mean of clipped gradients is divided by the batch, so its noise share is too.
    GaussianNoise noise(s.seed, world.rank());
    noise.add(grads, noise_share_std(wire.param, s.dp_clip, s.dp_workers, static_cast<double>(batch.size)));
    return grads;
  }
  model.loss_and_gradient(params, batch, grads, ws);
  switch (wire.kind) {
    case WireKind::plain: return grads;
    case WireKind::bf16: round_to_bf16(grads.data(), grads.size()); return grads;
    case WireKind::topk: return compressed("topk", wire.param, model, grads, s.seed);
    case WireKind::sign: return compressed("sign", 0, model, grads, s.seed);
    case WireKind::powersgd: return compressed("powersgd", wire.param, model, grads, s.seed);
    case WireKind::masked:
    case WireKind::masked_sum: {
      if (world.size() < 2)
        throw std::invalid_argument(fmt::format("wire '{}' needs at least 2 ranks (mpirun -n P)", wire.text));
      if (wire.kind == WireKind::masked_sum && world.size() != static_cast<int>(wire.param))
        throw std::invalid_argument(fmt::format("wire '{}' runs on exactly {} ranks, not {}", wire.text,
                                                static_cast<int>(wire.param), world.size()));
      const FixedPoint fixed(s.sa_range, world.size());
      SecureAggregator sa(world, PairKeys::agree(world), fixed, grads.size());
      const std::span<std::uint32_t> masked = sa.encode(grads, 1);
      if (wire.kind == WireKind::masked) {
        // The eavesdropper knows the public scale and reads the words as codes, as the aggregate is read.
        fixed.dequantize(masked.first(grads.size()), grads);
        sa.allreduce();  // the round completes, as it would: every rank takes part
        return grads;
      }
      sa.allreduce();
      sa.decode(grads);
      return grads;
    }
    case WireKind::dp:
    case WireKind::fedavg: break;
  }
  throw std::logic_error("wire_vector: unhandled wire");
}

}  // namespace gradsync::bench
