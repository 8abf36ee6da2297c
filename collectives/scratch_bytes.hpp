#pragma once
// The bytes a collective stages messages in, grown to the largest plan and never shrunk, so that a plan sized once
// costs nothing per call.
//
// In a simulation build a benchmark that only times communication may ask for shared scratch
// (share_scratch_between_ranks): every rank's scratch then comes from SMPI's shared allocation, one physical block
// mapped under all the simulated ranks, and SMPI does not copy messages to or from such memory. That is what lets
// 1024 simulated ranks run 16 MiB reductions in this machine's memory. The values in shared scratch are meaningless
// (the ranks overwrite each other), so the reductions are wrong by design: bench_allreduce --shared-buffers is the
// one caller, and it checks nothing.
#include <cstddef>

namespace gradsync {

class ScratchBytes {
 public:
  ScratchBytes() = default;
  ScratchBytes(const ScratchBytes&) = delete;
  ScratchBytes& operator=(const ScratchBytes&) = delete;
  ScratchBytes(ScratchBytes&& other) noexcept;
  ScratchBytes& operator=(ScratchBytes&& other) noexcept;
  ~ScratchBytes();

  // At least `bytes` from now on; the contents are not kept when it grows. Throws std::bad_alloc.
  void grow_to(std::size_t bytes);
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void release();
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool shared_ = false;  // how data_ was allocated, so that it is freed the same way
};

// This rank's scratch, from the next growth on, comes from SMPI's shared allocation. Called by every rank (globals
// are private to each simulated rank), before any collective is planned. Throws std::logic_error outside a
// simulation build.
void share_scratch_between_ranks();
bool scratch_shared_between_ranks();

}  // namespace gradsync
