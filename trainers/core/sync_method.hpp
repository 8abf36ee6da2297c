#pragma once
// The typed choices the command line makes about synchronization: the family and, for the allreduce family, which
// method; the parameter server's consistency mode. Text becomes these values once, in the parser
// (trainers/cli/cli.cpp, or sync_method() below for tests and benches); everything after compares values, never names.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectives/methods.hpp"

namespace gradsync {

enum class SyncFamily : std::uint8_t {
#define GRADSYNC_SYNC_FAMILY(id) id,
#include "trainers/core/sync_families.def"
#undef GRADSYNC_SYNC_FAMILY
};

// Each family's identifier as sync_families.def spells it ("allreduce", "ps"), indexed by SyncFamily: the CSVs'
// family column (the allreduce family has no --sync name of its own).
inline constexpr std::string_view kSyncFamilyIds[] = {
#define GRADSYNC_SYNC_FAMILY(id) #id,
#include "trainers/core/sync_families.def"
#undef GRADSYNC_SYNC_FAMILY
};
inline std::string_view sync_family_id(SyncFamily family) { return kSyncFamilyIds[static_cast<int>(family)]; }

// A run's synchronization, one field per dimension: the CSVs' family, allreduce, compressor and mode columns
// (TrainConfig::sync_dimensions). Empty where the dimension does not apply.
struct SyncDimensions {
  std::string family;      // sync_family_id
  std::string allreduce;   // --sync's allreduce method (fedavg: the one summing a round's updates), else empty
  std::string compressor;  // CompressionChoice::name(): "powersgd4", "topk0.01-noef"
  std::string mode;        // the family's mode ("ssp", "async") and the overlap ("buckets", "pipe+thread"), or blocking
};

// What --sync names. `allreduce` is set exactly for SyncFamily::allreduce: an entry of allreduce_method_table() that
// leaves the whole sum on every rank (AllreduceMethod::every_rank_gets_sum), so it outlives every config.
struct SyncMethod {
  SyncFamily family = SyncFamily::serial;
  const AllreduceMethod* allreduce = nullptr;

  std::string_view name() const;  // the --sync text: the family's name, or the allreduce method's
  bool operator==(const SyncMethod&) const = default;
};

// The method --sync `text` names, or nullopt: a family's name, or an allreduce method training can use.
std::optional<SyncMethod> find_sync_method(std::string_view text);
// find_sync_method for names a program spells itself (tests, benches): throws std::invalid_argument otherwise.
SyncMethod sync_method(std::string_view text);
// The names of the families --sync names directly ("serial, ps"), joined by `separator`: for help and error texts.
std::string sync_family_names(std::string_view separator = ", ");
// The allreduce methods training synchronizes with: those leaving the whole sum on every rank. --sync ps is the
// parameter-server trainer (trainers/families/ps/ps_training.hpp), not the ps allreduce.
inline bool trains(const AllreduceMethod& m) { return m.every_rank_gets_sum(); }

// Parameter-server consistency (trainers/families/ps/ps_training.hpp).
enum class PsMode : std::uint8_t { bsp, asp, ssp };
inline constexpr std::string_view kPsModeNames[] = {"bsp", "asp", "ssp"};  // indexed by PsMode
inline std::string_view ps_mode_name(PsMode mode) { return kPsModeNames[static_cast<int>(mode)]; }

}  // namespace gradsync
