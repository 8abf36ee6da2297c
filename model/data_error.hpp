#pragma once
#include <stdexcept>

namespace gradsync {

// Any problem with a data file; the message names the file and what is wrong with it.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gradsync
