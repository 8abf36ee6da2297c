#include "trainers/cli/settings_agreement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/agreement.hpp"

namespace gradsync {

std::string agree_on_settings(const Comm& world, const std::vector<Setting>& mine) {
  const std::string text = settings_text(mine);
  // As int64 (Comm's buffers have no unsigned type): only compared for equality, and printed.
  const auto digest = static_cast<std::int64_t>(fingerprint_of_name(text));
  const std::vector<std::int64_t> digests = world.all_gather(std::vector<std::int64_t>{digest});
  const auto differing =
      std::find_if(digests.begin(), digests.end(), [&](std::int64_t d) { return d != digests.front(); });
  if (differing == digests.end()) return {};
  const int rank = static_cast<int>(differing - digests.begin());
  std::string theirs = world.rank() == rank ? text : std::string();
  world.broadcast_string(theirs, rank);  // every rank knows `rank` from the digests: all take part
  if (world.rank() != 0) return fmt::format("rank {}'s settings differ from rank 0's (rank 0 names them)", rank);
  const std::string difference = describe_difference(mine, settings_from_text(theirs), rank);
  // Equal lists with unequal digests cannot happen (the digest is of the text); said plainly rather than returned
  // as agreement, which every other rank has already ruled out.
  return difference.empty()
             ? fmt::format("rank {}'s settings differ from rank 0's (digests {:#x} and {:#x})", rank,
                           static_cast<std::uint64_t>(*differing), static_cast<std::uint64_t>(digests.front()))
             : difference;
}

std::string agree_on_parsing(const Comm& world, const std::string& problem) {
  const std::vector<int> failed = world.all_gather(std::vector<int>{problem.empty() ? 0 : 1});
  const auto first = std::find(failed.begin(), failed.end(), 1);
  if (first == failed.end()) return {};
  const int rank = static_cast<int>(first - failed.begin());
  if (rank == 0) return world.rank() == 0 ? problem : "rank 0's command line does not parse (rank 0 names it)";
  std::string theirs = world.rank() == rank ? problem : std::string();
  world.broadcast_string(theirs, rank);  // every rank knows `rank` from the flags: all take part
  if (world.rank() != 0) return fmt::format("rank {}'s command line does not parse (rank 0 names it)", rank);
  constexpr std::string_view kPrefix = "train: error: ";
  const std::string_view what = std::string_view(theirs).starts_with(kPrefix)
                                    ? std::string_view(theirs).substr(kPrefix.size())
                                    : std::string_view(theirs);
  return fmt::format("train: error: rank {}'s command line does not parse: {}", rank, what);
}

}  // namespace gradsync
