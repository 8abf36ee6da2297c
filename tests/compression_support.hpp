#pragma once
// The compression choice a test names, parsed as --compress parses it.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "compression/compressors.hpp"

namespace gradsync::test {

// NAME[:PARAM] as --compress takes it, with error feedback on or off; a text the parser refuses fails the test
// with the parser's message.
inline CompressionChoice parsed_compression(const std::string& text, bool feedback = true) {
  std::string problem;
  std::optional<CompressionChoice> c = parse_compression(text, problem);
  INFO(problem);
  REQUIRE(c);
  c->error_feedback = feedback;
  return *c;
}

}  // namespace gradsync::test
