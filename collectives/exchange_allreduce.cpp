#include "collectives/exchange_allreduce.hpp"

#include <stdexcept>

namespace gradsync {
namespace {

constexpr ExchangeKind kFold{0, "fold: exchanging the whole buffer with the partner rank",
                             "MPI_Irecv (fold with the partner rank)", "MPI_Isend (fold with the partner rank)"};
constexpr ExchangeKind kCore{1, "butterfly exchange", "MPI_Irecv (butterfly exchange)", "MPI_Isend (butterfly exchange)"};
constexpr int kTags = 2;

}  // namespace

ExchangeAllreduce::Fold ExchangeAllreduce::fold_of(int rank, int size) {
  Fold f;
  while (f.core_size * 2 <= size) f.core_size *= 2;
  f.extra = size - f.core_size;
  if (rank < 2 * f.extra) {
    f.partner = rank ^ 1;
    f.core_rank = rank % 2 == 1 ? rank / 2 : -1;
  } else {
    f.core_rank = rank - f.extra;
  }
  return f;
}

ExchangeAllreduce::ExchangeAllreduce(Comm comm, AllreduceOptions options)
    : ScheduledAllreduce(std::move(comm), options, native_wire(), kTags), fold_(fold_of(comm_.rank(), comm_.size())) {
  if (options.segment_bytes == kAutoSegmentBytes)
    throw std::invalid_argument("rd/rhd: segment_bytes is 0 (automatic); build the method with make_allreduce");
}

Exchange ExchangeAllreduce::swap(int peer, ElementRange send, ElementRange recv, bool add) {
  return {.kind = &kCore, .to = peer, .from = peer, .send = send, .recv = recv, .add = add};
}

//   P = 6: P' = 4, E = 2.   fold in           core (P' = 4)            fold out
//   rank 0 (even) ----------> rank 1 (core 0)   butterfly among        rank 1 ---> rank 0
//   rank 2 (even) ----------> rank 3 (core 1)   cores 0..3             rank 3 ---> rank 2
//                             rank 4 (core 2), rank 5 (core 3)
void ExchangeAllreduce::plan(std::size_t count, Dtype, Schedule& schedule) const {
  const ElementRange all{0, count};
  std::vector<Exchange>& steps = schedule.steps;
  if (fold_.core_rank < 0) {
    steps.push_back({.kind = &kFold, .to = fold_.partner, .send = all});                  // hand over
    steps.push_back({.kind = &kFold, .from = fold_.partner, .recv = all, .add = false});  // the result
  } else {
    // The odd rank adds its even partner's buffer in, then later hands it the result.
    if (fold_.partner >= 0) steps.push_back({.kind = &kFold, .from = fold_.partner, .recv = all});
    plan_core(count, steps);
    if (fold_.partner >= 0) steps.push_back({.kind = &kFold, .to = fold_.partner, .send = all});
  }
  schedule.segment_bytes = options_.segment_bytes;
}

}  // namespace gradsync
