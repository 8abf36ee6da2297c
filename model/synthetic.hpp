#pragma once
// Generated data for tests and quick experiments: no files, fully determined by the seed.
#include <cstdint>

#include "model/dataset.hpp"

namespace gradsync {

// `rows` examples of `features` values in [0, 1], labelled by which of `classes` random prototypes they were
// drawn around (noise amplitude `noise`); with small noise the classes are linearly separable. The prototypes
// depend on `seed` only, the examples also on `sample_stream`: a train and a test split share the seed.
// 1 <= classes <= 256 (labels are bytes); throws std::invalid_argument otherwise.
Dataset make_blobs(std::size_t rows, std::size_t features, int classes, float noise, std::uint64_t seed,
                   std::uint64_t sample_stream = 0);

}  // namespace gradsync
