#pragma once
// The one list of gradient compressors (train --compress NAME[:PARAM], train --list-compressors, the tests). A new
// compressor is its own file defining a CompressorInfo and one line of compressors.def.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "compression/compressor.hpp"
#include "compression/part_codec.hpp"

namespace gradsync {

struct CompressorInfo {
  std::string_view name;
  std::string_view param;    // what NAME:PARAM sets ("R", "F"), empty if it takes none
  std::string_view summary;  // one line for --list-compressors and help texts
  // Its sums go through --sync's allreduce method (any method that leaves the sum on every rank carries it); false:
  // it exchanges its parts itself, on the workers' communicator, and the method is not used for the gradient.
  bool uses_allreduce = false;
  // Empty, or a one-line message about PARAM (the flag is named by the caller).
  std::string (*check_param)(double param) = nullptr;
  // Empty, or a one-line message naming the first tensor this compressor cannot treat with `param`.
  std::string (*check_model)(double param, std::span<const Tensor> tensors) = nullptr;
  // Plans the compressor on setup.workers: collective over them when it plans an allreduce (make_allreduce).
  std::unique_ptr<Compressor> (*make)(const CompressorSetup& setup) = nullptr;
  // Its part codec on `tensors` (part_codec.hpp), for a parameter server's compressed push
  // (compressed_push.hpp); null: it has none and cannot push (its sums must come back to every worker between steps).
  std::unique_ptr<PartCodec> (*make_codec)(double param, std::span<const Tensor> tensors) = nullptr;
  // The size of Compressor::state() for `param` and `tensors`; null: it keeps none.
  std::size_t (*state_size)(double param, std::span<const Tensor> tensors) = nullptr;
};

// Every compressor, in listing order.
std::span<const CompressorInfo* const> compressor_table();
const CompressorInfo* find_compressor(std::string_view name);
// "powersgd:R, topk:F, sign": for help and error texts.
std::string compressor_names(std::string_view separator = ", ");
// "topk, sign": the compressors with a part codec (each worker's part its own, compression/part_codec.hpp), which
// the parameter server's pushes and CHOCO-SGD's gossip can carry; for their error texts.
std::string codec_compressor_names();
// One line per compressor, "name[:PARAM]<TAB>allreduce|own-exchange<TAB>summary".
std::string compressor_listing();

// What --compress and --error-feedback chose. TrainConfig holds one (trainers/config/train_config.hpp).
struct CompressionChoice {
  const CompressorInfo* compressor = nullptr;  // nullptr: gradients are sent dense
  double param = 0;                            // R or F as given
  bool error_feedback = true;                  // keep a residual per worker (error_feedback.hpp)
  bool error_feedback_given = false;           // --error-feedback was on the command line
  bool enabled() const { return compressor != nullptr; }
  std::string name() const;  // "powersgd4", "topk0.01", "sign", with "-noef" when error feedback is off
};

// Parses NAME[:PARAM]: the choice (error feedback on), or a one-line message naming the known compressors or what
// is wrong with PARAM.
std::optional<CompressionChoice> parse_compression(std::string_view text, std::string& problem);

}  // namespace gradsync
