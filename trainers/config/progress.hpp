#pragma once
// Who moves overlapped communication on (trainers/overlap/comm_engine.hpp): the worker between its kernels, or a thread.
#include <cstdint>

namespace gradsync {

enum class Progress : std::uint8_t { calls, thread };

}  // namespace gradsync
