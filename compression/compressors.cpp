#include "compression/compressors.hpp"

#include <fmt/format.h>

#include <charconv>

namespace gradsync {

// Each entry is defined in its compressor's file; compressors.def is the only list of them.
#define GRADSYNC_COMPRESSOR(id) extern const CompressorInfo id##_compressor;
#include "compression/compressors.def"
#undef GRADSYNC_COMPRESSOR

namespace {

constexpr const CompressorInfo* kCompressors[] = {
#define GRADSYNC_COMPRESSOR(id) &id##_compressor,
#include "compression/compressors.def"
#undef GRADSYNC_COMPRESSOR
};

std::string spelled(const CompressorInfo& c) {
  return c.param.empty() ? std::string(c.name) : fmt::format("{}:{}", c.name, c.param);
}

}  // namespace

std::span<const CompressorInfo* const> compressor_table() { return kCompressors; }

const CompressorInfo* find_compressor(std::string_view name) {
  for (const CompressorInfo* c : kCompressors)
    if (c->name == name) return c;
  return nullptr;
}

std::string compressor_names(std::string_view separator) {
  std::string names;
  for (const CompressorInfo* c : kCompressors) names += fmt::format("{}{}", names.empty() ? "" : separator, spelled(*c));
  return names;
}

std::string codec_compressor_names() {
  std::string names;
  for (const CompressorInfo* c : kCompressors)
    if (c->make_codec) names += fmt::format("{}{}", names.empty() ? "" : ", ", c->name);
  return names;
}

std::string compressor_listing() {
  std::string lines;
  for (const CompressorInfo* c : kCompressors)
    lines += fmt::format("{}\t{}\t{}\n", spelled(*c), c->uses_allreduce ? "allreduce" : "own-exchange", c->summary);
  return lines;
}

std::string CompressionChoice::name() const {
  if (!compressor) return {};
  std::string text(compressor->name);
  if (!compressor->param.empty()) text += fmt::format("{}", param);
  return error_feedback ? text : text + "-noef";
}

std::optional<CompressionChoice> parse_compression(std::string_view text, std::string& problem) {
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const CompressorInfo* c = find_compressor(name);
  if (!c) {
    problem = fmt::format("unknown compressor '{}' (choose {})", name, compressor_names());
    return std::nullopt;
  }
  CompressionChoice choice{c};
  if (c->param.empty()) {
    if (colon == std::string_view::npos) return choice;
    problem = fmt::format("'{}' takes no parameter, got '{}'", name, text);
    return std::nullopt;
  }
  const std::string_view value = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), choice.param);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
    problem = fmt::format("'{}' needs a number: {}", text, spelled(*c));
    return std::nullopt;
  }
  if (problem = c->check_param(choice.param); !problem.empty()) return std::nullopt;
  return choice;
}

}  // namespace gradsync
