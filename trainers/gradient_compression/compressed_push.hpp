#pragma once
// --compress with --sync ps: each worker pushes its gradient compressed, one part per server's key range
// (part_codec.hpp), and each server decodes the parts before it sums or applies them; the parameters come back
// dense. The compressors with a part codec push (top-k, sign). PowerSGD does not: its factors are sums over the
// workers that every worker needs back before its next product, and a server holds a key range, not whole matrices.
// Error feedback stays on the worker, since a part is all a server learns of a gradient; its arithmetic is
// error_feedback.hpp's.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "collectives/allreduce.hpp"
#include "compression/compressors.hpp"
#include "model/layer_shape.hpp"

namespace gradsync {

class CompressedPush {
 public:
  // `choice`'s codec (its compressor has make_codec) planned on each of `key_ranges`, which tile the model of
  // `layers` (Model::layers()). Local; allocates once.
  CompressedPush(const CompressionChoice& choice, std::span<const LayerShape> layers,
                 std::span<const ElementRange> key_ranges);

  // a = grads + r (grads alone without error feedback); writes the part of a for every key range; r' = a - c, where
  // c is what the servers decode from the parts. `grads` holds the whole model and is only read.
  void encode(std::span<const float> grads);
  // The part for key range `s` from the last encode(), of its planned size: valid until the next encode().
  std::span<const std::int32_t> part(std::size_t s) const { return parts_[s]; }
  // This worker's residual r, the whole model (zeros before the first step); empty without error feedback. Training
  // state: writable, so that a resumed run puts it back.
  std::span<float> residual() { return on_ ? std::span<float>(residual_) : std::span<float>(); }
  // The last encode()'s contribution c, the whole model (what the servers decode).
  std::span<const float> contribution() const { return mine_; }

 private:
  bool on_;
  std::vector<ElementRange> ranges_;
  std::vector<std::unique_ptr<PartCodec>> codecs_;  // one per key range
  std::vector<std::vector<std::int32_t>> parts_;
  std::vector<float> residual_;  // r between steps; a during encode() (and a's scratch without error feedback)
  std::vector<float> mine_;
};

// A server's side: the parts pushed for its key range, decoded.
class PushDecoder {
 public:
  // The codec every worker's CompressedPush planned for `key_range` of the model of `layers`. Local.
  PushDecoder(const CompressionChoice& choice, std::span<const LayerShape> layers, ElementRange key_range);
  std::size_t words() const { return codec_->words(); }
  // out := the gradient `part` encodes, key_range.size() floats. Throws std::runtime_error on a part no worker of
  // this plan writes (its size, or an index beyond the range).
  void decode(std::span<const std::int32_t> part, std::span<float> out) const;

 private:
  std::unique_ptr<PartCodec> codec_;
};

}  // namespace gradsync
