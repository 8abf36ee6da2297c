#pragma once
// Command-line helpers shared by the benchmark binaries.
#include <cstddef>
#include <string>
#include <vector>

namespace gradsync::bench {

// "4", "1K", "1KiB", "64M", "64MiB", "1G": bytes (binary multiples). Throws std::invalid_argument naming `flag`.
std::size_t parse_bytes(const std::string& text, const std::string& flag);
// Comma-separated list of the above.
std::vector<std::size_t> parse_byte_list(const std::string& text, const std::string& flag);
// 4 B, 16 KiB, 64 MiB
std::string human_bytes(std::size_t bytes);

}  // namespace gradsync::bench
