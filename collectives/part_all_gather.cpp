#include "collectives/part_all_gather.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "collectives/watchdog.hpp"

namespace gradsync {

PartAllGather::PartAllGather(Comm comm, std::size_t capacity)
    : comm_(std::move(comm)), capacity_(capacity), tag_(comm_.reserve_tags(1)),
      slots_(static_cast<std::size_t>(comm_.size()) * (capacity + 1)) {}

void PartAllGather::run(std::span<const std::int32_t> mine) {
  if (mine.size() > capacity_)
    throw std::invalid_argument(
        fmt::format("PartAllGather::run: a part of {} words, above the planned {}", mine.size(), capacity_));
  const int p = comm_.size(), r = comm_.rank();
  std::span<std::int32_t> own = slot(r);
  own[0] = static_cast<std::int32_t>(mine.size());
  std::copy(mine.begin(), mine.end(), own.begin() + 1);
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  for (int step = 0; step < p - 1; ++step) {
    const std::span<std::int32_t> out = slot((r - step + p) % p), in = slot((r - step - 1 + p) % p);
    const auto out_words = static_cast<std::size_t>(out[0]) + 1;
    std::array<MPI_Request, 2> requests = {comm_.irecv(in, left, tag_), comm_.isend(out.first(out_words), right, tag_)};
    const WaitScope wait("part all-gather: a part from the left neighbour", -1, left);
    comm_.wait_all(requests, "part all-gather");
    if (in[0] < 0 || static_cast<std::size_t>(in[0]) > capacity_)
      throw MpiError(fmt::format("part all-gather on rank {}: a part of {} words from rank {}, outside 0..{}", r, in[0],
                                 left, capacity_));
  }
}

std::span<const std::int32_t> PartAllGather::part(int rank) const {
  const std::int32_t* s = slots_.data() + static_cast<std::size_t>(rank) * (capacity_ + 1);
  return {s + 1, static_cast<std::size_t>(s[0])};
}

}  // namespace gradsync
