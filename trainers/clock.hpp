#pragma once
#include <chrono>

namespace gradsync {

// Seconds on a monotonic clock, for the trainer's time accounting.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace gradsync
