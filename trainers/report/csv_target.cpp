#include "trainers/report/csv_target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace gradsync {
namespace {

std::size_t columns(const std::string& line) {
  return static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

}  // namespace

std::string csv_target_problem(const std::string& flag, const std::string& path, const std::string& header) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  if (existed && std::filesystem::is_directory(path, ec)) return fmt::format("{} {}: is a directory", flag, path);
  // Opening for appending is the test the rows will meet, whatever the reason it fails (no such directory, no
  // permission, a read-only file system).
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return fmt::format("{} {}: cannot open for appending: {}", flag, path, std::strerror(errno));
  std::fclose(f);
  if (!existed) {
    std::filesystem::remove(path, ec);
    return {};
  }
  std::ifstream in(path);
  if (!in) return fmt::format("{} {}: cannot be read: {}", flag, path, std::strerror(errno));
  std::string first;
  if (!std::getline(in, first)) return {};  // empty: the header is written first
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first == header) return {};
  return fmt::format(
      "{} {}: its header differs from this run's ({} columns in the file's, {} in this run's): give "
      "another file",
      flag, path, columns(first), columns(header));
}

}  // namespace gradsync
