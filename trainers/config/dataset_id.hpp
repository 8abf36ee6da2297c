#pragma once
// The datasets `train --dataset` names, listed once: the command line's check and help, the default directory
// (trainers/loop/data_source.hpp), the reports' and CSVs' dataset column and the checkpoint's identity read this.
#include <cstdint>
#include <optional>
#include <string_view>

namespace gradsync {

enum class DatasetId : std::uint8_t { mnist, fashion };
inline constexpr std::string_view kDatasetNames[] = {"mnist", "fashion"};  // indexed by DatasetId

inline std::string_view dataset_name(DatasetId d) { return kDatasetNames[static_cast<int>(d)]; }
// The dataset called `name`, or nullopt.
inline std::optional<DatasetId> find_dataset(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kDatasetNames); ++i)
    if (kDatasetNames[i] == name) return static_cast<DatasetId>(i);
  return std::nullopt;
}

}  // namespace gradsync
