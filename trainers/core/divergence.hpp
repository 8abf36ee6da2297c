#pragma once
#include <stdexcept>

namespace gradsync {

// NaN or Inf in a loss or a gradient. Thrown on the rank that saw it; `train` callers end the job.
struct DivergenceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gradsync
