#include "trainers/gradient_compression/compressed_push.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsync {
namespace {

std::unique_ptr<PartCodec> codec_for(const CompressionChoice& choice, std::span<const LayerShape> layers,
                                     ElementRange range) {
  if (!choice.enabled() || !choice.compressor->make_codec)
    throw std::invalid_argument("CompressedPush: needs a compressor with a part codec (validate_compression)");
  const std::vector<Tensor> all = model_tensors(layers);
  return choice.compressor->make_codec(choice.param, tensors_cut(all, range));
}

}  // namespace

CompressedPush::CompressedPush(const CompressionChoice& choice, std::span<const LayerShape> layers,
                               std::span<const ElementRange> key_ranges)
    : on_(choice.error_feedback), ranges_(key_ranges.begin(), key_ranges.end()) {
  const std::size_t n = ranges_.empty() ? 0 : ranges_.back().end;
  for (const ElementRange& range : ranges_) {
    codecs_.push_back(codec_for(choice, layers, range));
    parts_.emplace_back(codecs_.back()->words());
  }
  residual_.resize(n);
  mine_.resize(n);
}

void CompressedPush::encode(std::span<const float> grads) {
  const std::size_t n = residual_.size();
  if (on_)
    for (std::size_t i = 0; i < n; ++i) residual_[i] += grads[i];
  else
    std::copy_n(grads.begin(), n, residual_.begin());
  for (std::size_t s = 0; s < ranges_.size(); ++s) {
    const ElementRange r = ranges_[s];
    codecs_[s]->encode(std::span(residual_).subspan(r.begin, r.size()), std::span(mine_).subspan(r.begin, r.size()),
                       parts_[s]);
  }
  if (on_)
    for (std::size_t i = 0; i < n; ++i) residual_[i] -= mine_[i];
  else
    std::fill(residual_.begin(), residual_.end(), 0.0f);
}

PushDecoder::PushDecoder(const CompressionChoice& choice, std::span<const LayerShape> layers, ElementRange key_range)
    : codec_(codec_for(choice, layers, key_range)) {}

void PushDecoder::decode(std::span<const std::int32_t> part, std::span<float> out) const {
  std::fill(out.begin(), out.end(), 0.0f);
  codec_->add_part(part, out);
}

}  // namespace gradsync
