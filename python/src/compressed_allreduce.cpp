// ProcessGroupGradsync::compressed_allreduce: a DDP bucket through one of gradsync's compressors with error feedback
// (gradsync.hooks.compression_hook calls it). The bucket's gradients become the compressor's tensors: a gradient of
// two or more dimensions is a matrix of its first dimension by the rest (PowerSGD's view of a convolution's
// weights), anything else a vector; a gap between gradients in the buffer is a vector of its own.
#include <algorithm>
#include <numeric>
#include <string>

#include "process_group.hpp"
#include "tensor_types.hpp"

namespace gradsync::torch_backend {
namespace {

// The bucket's tensors tiling [0, count), or a problem.
std::vector<Tensor> bucket_tensors(int bucket, std::size_t count, const std::vector<std::vector<int64_t>>& shapes,
                                   const std::vector<int64_t>& offsets, std::string& problem) {
  std::vector<std::size_t> order(shapes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
  std::vector<Tensor> tensors;
  std::size_t at = 0;
  for (std::size_t i : order) {
    const std::vector<int64_t>& shape = shapes[i];
    const auto size = static_cast<std::size_t>(
        std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<std::int64_t>()));
    const auto offset = static_cast<std::size_t>(offsets[i]);
    if (offset < at || offset + size > count) {
      problem = "bucket " + std::to_string(bucket) + "'s gradients overlap or leave its buffer";
      return {};
    }
    if (offset > at) tensors.push_back({at, 1, offset - at, "a gap in bucket " + std::to_string(bucket)});
    const bool matrix = shape.size() >= 2 && shape[0] > 1 && size / static_cast<std::size_t>(shape[0]) > 1;
    const std::size_t rows = matrix ? static_cast<std::size_t>(shape[0]) : 1;
    tensors.push_back({offset, rows, size / rows,
                       "bucket " + std::to_string(bucket) + " gradient " + std::to_string(i) + " (" +
                           std::to_string(rows) + " x " + std::to_string(size / rows) + ")"});
    at = offset + size;
  }
  if (at < count) tensors.push_back({at, 1, count - at, "the end of bucket " + std::to_string(bucket)});
  return tensors;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::compressed_allreduce(int bucket, at::Tensor buffer,
                                                                          const std::vector<std::vector<int64_t>>& shapes,
                                                                          const std::vector<int64_t>& offsets,
                                                                          const std::string& compressor, double param,
                                                                          bool error_feedback, int64_t seed) {
  Call call{.what = "compressed allreduce " + compressor + ":" + std::to_string(param) + " of bucket " +
                    std::to_string(bucket) + " " + dtype_text(buffer.scalar_type()) + "[" +
                    std::to_string(buffer.numel()) + "]",
            .refusal = placement_problem(buffer)};
  if (call.refusal.empty() && (buffer.scalar_type() != at::kFloat || !buffer.is_contiguous()))
    call.refusal = "the compressors take a contiguous float32 bucket, not " + dtype_text(buffer.scalar_type());
  const CompressorInfo* info = find_compressor(compressor);
  if (call.refusal.empty() && info == nullptr)
    call.refusal = "unknown compressor '" + compressor + "' (" + compressor_names() + ")";
  if (call.refusal.empty() && shapes.size() != offsets.size()) call.refusal = "one offset per gradient shape";
  const auto count = static_cast<std::size_t>(buffer.numel());
  std::vector<Tensor> tensors;
  if (call.refusal.empty()) tensors = bucket_tensors(bucket, count, shapes, offsets, call.refusal);
  if (call.refusal.empty() && info->check_param) call.refusal = info->check_param(param);
  if (call.refusal.empty() && info->check_model) call.refusal = info->check_model(param, tensors);
  std::string signature = call.what + (error_feedback ? " ef" : " no-ef");
  for (const Tensor& t : tensors)
    signature += " " + std::to_string(t.offset) + ":" + std::to_string(t.rows) + "x" + std::to_string(t.cols);
  call.what = signature;
  return submit(c10d::OpType::ALLREDUCE, "gradsync backend: compressed allreduce", {buffer}, std::move(call),
                [=, tensors = std::move(tensors)](Group& g) {
                  if (count == 0) return;
                  const CompressorSetup setup{.workers = g.comm(),
                                              .method = find_allreduce_method(g.method()),
                                              .options = {},
                                              .tensors = tensors,
                                              .param = param,
                                              .seed = static_cast<std::uint64_t>(seed)};
                  ErrorFeedback& feedback = g.compressor(bucket, signature, *info, setup, count, error_feedback);
                  feedback.step(std::span<float>(buffer.data_ptr<float>(), count));
                  buffer.div_(g.comm().size());
                });
}

}  // namespace gradsync::torch_backend
