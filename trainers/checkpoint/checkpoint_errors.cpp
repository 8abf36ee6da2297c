#include "trainers/checkpoint/checkpoint_errors.hpp"

#include <array>
#include <cstdint>

#include "model/checkpoint.hpp"

namespace gradsync {

std::string broadcast_text(std::string text, bool is_error, const Comm& world) {
  std::array<std::int64_t, 2> head = {static_cast<std::int64_t>(text.size()), is_error ? 1 : 0};
  world.broadcast(head, 0);  // the length and the flag in one message
  text.resize(static_cast<std::size_t>(head[0]));
  if (head[0] > 0) world.broadcast(text, 0);
  if (head[1] != 0) throw CheckpointError(text);
  return text;
}

void agree_on_errors(const std::string& mine, const Comm& world) {
  const bool ok = world.all_ok(mine.empty());
  if (ok) return;
  const int failing = world.min(mine.empty() ? world.size() : world.rank());
  std::string text = mine;
  world.broadcast_string(text, failing);
  throw CheckpointError(text);
}

}  // namespace gradsync
