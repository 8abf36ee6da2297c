#pragma once
// What one worker puts on the wire at a step, for the leak tool (bench/leak/leak_images.cpp): its gradient as the
// compressors, DP-SGD's clipping and noise, secure aggregation's masking or federated averaging's local epochs leave
// it, as the float vector an eavesdropper (or a ring neighbour, or the server) decodes from the bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collectives/comm.hpp"
#include "model/dataset.hpp"
#include "model/model.hpp"

namespace gradsync::bench {

enum class WireKind : std::uint8_t { plain, bf16, topk, sign, powersgd, dp, masked, masked_sum, fedavg };

struct Wire {
  WireKind kind = WireKind::plain;
  double param = 0;  // topk's F, powersgd's R, dp's sigma, masked-sum's P, fedavg's E
  std::string text;  // as given: "topk:0.01"
  // Ranks the run needs: masked and masked-sum:P need P >= 2 ranks (masked: any P >= 2), the others one.
  bool needs_ranks() const { return kind == WireKind::masked || kind == WireKind::masked_sum; }
};

// Parses plain|bf16|topk:F|sign|powersgd:R|dp:SIGMA|masked|masked-sum:P|fedavg:E; a one-line problem otherwise.
std::optional<Wire> parse_wire(const std::string& text, std::string& problem);

struct WireSettings {
  float dp_clip = 1.0f;          // DP-SGD's per-example clip C
  int dp_workers = 1;            // the noise share is sigma C / sqrt(dp_workers): 1 = the whole of DP-SGD's noise
  double sa_range = 1.0;         // secure aggregation's fixed-point range R
  float lr = 0.1f;               // fedavg's local learning rate
  std::size_t local_batch = 10;  // fedavg's local batch (at most the client's examples)
  std::uint64_t seed = 1;
};

// This rank's wire vector (parameter_count() floats) for `batch` (this rank's examples of `data`, gathered with float
// rows) at `params`. Collective over `world` for masked and masked-sum (every rank calls it; masked-sum returns the
// decoded aggregate, the same on every rank); local otherwise. `ws` made for `model` and the batch's size.
std::vector<float> wire_vector(const Wire& wire, const WireSettings& settings, const Model& model,
                               std::span<const float> params, const Dataset& data, std::span<const std::uint32_t> indices,
                               Batch& batch, Workspace& ws, const Comm& world);

}  // namespace gradsync::bench
