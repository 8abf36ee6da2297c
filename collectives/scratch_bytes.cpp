#include "collectives/scratch_bytes.hpp"

#include <mpi.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <utility>

namespace gradsync {

namespace {
bool shared_scratch = false;
}  // namespace

void share_scratch_between_ranks() {
#ifdef GRADSYNC_SIMULATED
  shared_scratch = true;
#else
  throw std::logic_error("shared scratch exists only in a simulation build (scripts/simulate.sh build)");
#endif
}

bool scratch_shared_between_ranks() { return shared_scratch; }

ScratchBytes::ScratchBytes(ScratchBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      shared_(std::exchange(other.shared_, false)) {}

ScratchBytes& ScratchBytes::operator=(ScratchBytes&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    shared_ = std::exchange(other.shared_, false);
  }
  return *this;
}

ScratchBytes::~ScratchBytes() { release(); }

void ScratchBytes::release() {
  if (!data_) return;
#ifdef GRADSYNC_SIMULATED
  if (shared_) {
    SMPI_SHARED_FREE(data_);
    data_ = nullptr;
    size_ = 0;
    return;
  }
#endif
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

void ScratchBytes::grow_to(std::size_t bytes) {
  if (bytes <= size_) return;
  release();
  void* p = nullptr;
#ifdef GRADSYNC_SIMULATED
  shared_ = shared_scratch;
  if (shared_) p = SMPI_SHARED_MALLOC(bytes);
#endif
  if (!shared_) p = std::malloc(bytes);
  if (!p) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
}

}  // namespace gradsync
