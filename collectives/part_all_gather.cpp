#include "collectives/part_all_gather.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "collectives/watchdog.hpp"

namespace gradsync {

PartAllGather::PartAllGather(Comm comm, std::size_t capacity)
    : comm_(std::move(comm)), capacity_(capacity), tag_(comm_.reserve_tags(1)),
      slots_(static_cast<std::size_t>(comm_.size()) * (capacity + 1)) {}

void PartAllGather::run(std::span<const std::int32_t> mine) {
  start(mine);
  wait();
}

void PartAllGather::start(std::span<const std::int32_t> mine) {
  if (in_flight_) throw std::logic_error("PartAllGather::start: an exchange is already in flight");
  if (mine.size() > capacity_)
    throw std::invalid_argument(
        fmt::format("PartAllGather::run: a part of {} words, above the planned {}", mine.size(), capacity_));
  std::span<std::int32_t> own = slot(comm_.rank());
  own[0] = static_cast<std::int32_t>(mine.size());
  std::copy(mine.begin(), mine.end(), own.begin() + 1);
  step_ = 0;
  in_flight_ = true;
  post_step();
}

bool PartAllGather::test() {
  while (in_flight_) {
    if (!comm_.test_all(requests_, "part all-gather")) return false;
    finish_step();
  }
  return true;
}

void PartAllGather::wait() {
  const int left = (comm_.rank() - 1 + comm_.size()) % comm_.size();
  while (in_flight_) {
    {
      const WaitScope wait("part all-gather: a part from the left neighbour", -1, left);
      comm_.wait_all(requests_, "part all-gather");
    }
    finish_step();
  }
}

// In step s every rank sends the part it received in step s - 1 (its own at s = 0) to the right and receives the
// part from s + 1 ranks to its left.
void PartAllGather::post_step() {
  const int p = comm_.size(), r = comm_.rank();
  if (step_ >= p - 1) {
    in_flight_ = false;
    return;
  }
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  const std::span<std::int32_t> out = slot((r - step_ + p) % p), in = slot((r - step_ - 1 + p) % p);
  const auto out_words = static_cast<std::size_t>(out[0]) + 1;
  requests_ = {comm_.irecv(in, left, tag_), comm_.isend(out.first(out_words), right, tag_)};
}

void PartAllGather::finish_step() {
  const int p = comm_.size(), r = comm_.rank(), left = (r - 1 + p) % p;
  const std::int32_t words = slot((r - step_ - 1 + p) % p)[0];
  if (words < 0 || static_cast<std::size_t>(words) > capacity_) {
    in_flight_ = false;
    throw MpiError(fmt::format("part all-gather on rank {}: a part of {} words from rank {}, outside 0..{}", r, words,
                               left, capacity_));
  }
  ++step_;
  post_step();
}

std::span<const std::int32_t> PartAllGather::part(int rank) const {
  const std::int32_t* s = slots_.data() + static_cast<std::size_t>(rank) * (capacity_ + 1);
  return {s + 1, static_cast<std::size_t>(s[0])};
}

}  // namespace gradsync
