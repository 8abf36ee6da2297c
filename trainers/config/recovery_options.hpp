#pragma once
// What the survivors of a lost process do (--recover): re-form the run in place over themselves under a ULFM MPI
// (trainers/loop/in_place.hpp), or end the job, which scripts/elastic.sh then relaunches from its checkpoints.
#include <cstdint>
#include <optional>
#include <string_view>

namespace gradsync {

enum class Recover : std::uint8_t { automatic, in_place, abort };
inline constexpr std::string_view kRecoverNames[] = {"auto", "inplace", "abort"};  // indexed by Recover
inline std::string_view recover_name(Recover r) { return kRecoverNames[static_cast<int>(r)]; }
inline std::optional<Recover> find_recover(std::string_view text) {
  for (int i = 0; i < 3; ++i)
    if (kRecoverNames[i] == text) return static_cast<Recover>(i);
  return std::nullopt;
}

}  // namespace gradsync
