#pragma once
// How a federated run's training set is dealt to its clients, as the command line names it (--partition): data of
// the configuration (trainers/config/federated_options.hpp); trainers/families/fedavg/partition.hpp deals it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gradsync {

enum class PartitionKind : std::uint8_t { iid, shards, dirichlet };

// --partition: iid | shards:S | dirichlet:ALPHA.
struct PartitionSpec {
  PartitionKind kind = PartitionKind::iid;
  int shards = 2;            // shards: each client's number of label-sorted shards
  double alpha = 0.5;        // dirichlet: the concentration (small: each client sees few labels)
  std::string name() const;  // the --partition text, e.g. "shards:2"
};

// The spec `text` names, or nullopt with `problem` set to why not (for a usage error naming --partition).
std::optional<PartitionSpec> parse_partition(std::string_view text, std::string& problem);

}  // namespace gradsync
