#include "collectives/exchange_allreduce.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsync {
namespace {

constexpr int kTagFold = 0x46;
constexpr int kTagCore = 0x58;

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
    : Allreduce(std::move(comm), options), fold_(fold_of(comm_.rank(), comm_.size())) {
  if (options.segment_bytes == kAutoSegmentBytes)
    throw std::invalid_argument("rd/rhd: segment_bytes is 0 (automatic); build the method with make_allreduce");
}

//   P = 6: P' = 4, E = 2.   fold in           core (P' = 4)            fold out
//   rank 0 (even) ----------> rank 1 (core 0)   butterfly among        rank 1 ---> rank 0
//   rank 2 (even) ----------> rank 3 (core 1)   cores 0..3             rank 3 ---> rank 2
//                             rank 4 (core 2), rank 5 (core 3)
void ExchangeAllreduce::plan(std::size_t count, Dtype type) {
  if (!steps_.empty() && planned_count_ == count && planned_type_ == type) return;
  const ElementRange all{0, count};
  steps_.clear();
  if (fold_.core_rank < 0) {
    steps_.push_back({.peer = fold_.partner, .sends = true, .send = all, .fold = true});  // hand over the buffer
    steps_.push_back({.peer = fold_.partner, .receives = true, .recv = all, .add = false, .fold = true});  // the result
  } else {
    // The odd rank adds its even partner's buffer in, then later hands it the result.
    if (fold_.partner >= 0) steps_.push_back({.peer = fold_.partner, .receives = true, .recv = all, .fold = true});
    plan_core(count, steps_);
    if (fold_.partner >= 0) steps_.push_back({.peer = fold_.partner, .sends = true, .send = all, .fold = true});
  }
  const Segmenter cut(options_.segment_bytes, dtype_size(type));
  std::size_t landing = 0, requests = 0;
  for (const Exchange& e : steps_) {
    if (e.receives && e.add) landing = std::max(landing, e.recv.size());
    requests =
        std::max(requests, (e.receives ? cut.pieces(e.recv.size()) : 0) + (e.sends ? cut.pieces(e.send.size()) : 0));
  }
  landing *= dtype_size(type);
  if (scratch_.size() < landing) scratch_.resize(landing);
  requests_.resize(requests);
  planned_count_ = count;
  planned_type_ = type;
}

void ExchangeAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  plan(count, type);
  data_ = data;
  next_ = 0;
  post(0);
}

void ExchangeAllreduce::post(std::size_t i) {
  const Exchange& e = steps_[i];
  const bool folding = e.fold;
  const int tag = folding ? kTagFold : kTagCore;
  const std::size_t elem = dtype_size(planned_type_);
  const MPI_Datatype type = mpi_type(planned_type_);
  const Segmenter cut(options_.segment_bytes, elem);
  std::fill(requests_.begin(), requests_.end(), MPI_REQUEST_NULL);
  std::size_t posted = 0;
  if (e.receives) {
    std::byte* landing = e.add ? scratch_.data() : data_ + e.recv.begin * elem;
    cut.irecv(landing, e.recv.size(), type, e.peer, tag, comm_, &requests_[0],
              folding ? "MPI_Irecv (fold with the partner rank)" : "MPI_Irecv (butterfly exchange)");
    posted = cut.pieces(e.recv.size());
  }
  if (e.sends) {
    cut.isend(data_ + e.send.begin * elem, e.send.size(), type, e.peer, tag, comm_, &requests_[posted],
              folding ? "MPI_Isend (fold with the partner rank)" : "MPI_Isend (butterfly exchange)");
    posted += cut.pieces(e.send.size());
  }
  stage_ = {{requests_.data(), posted},
            folding ? "fold: exchanging the whole buffer with the partner rank" : "butterfly exchange",
            e.peer};
}

bool ExchangeAllreduce::advance() {
  const Exchange& e = steps_[next_];
  if (e.receives && e.add) {
    const std::size_t elem = dtype_size(planned_type_);
    add_into(data_ + e.recv.begin * elem, scratch_.data(), e.recv.size(), planned_type_);
  }
  if (++next_ == steps_.size()) return true;
  post(next_);
  return false;
}

}  // namespace gradsync
