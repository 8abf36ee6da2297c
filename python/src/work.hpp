#pragma once
// What a gradsync collective returns to PyTorch: done on the progress thread (progress.hpp), with a Future that DDP
// chains its bucket's callback on (getFuture), as ProcessGroupMPI's WorkMPI.
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <vector>

namespace gradsync::torch_backend {

class GradsyncWork final : public c10d::Work {
 public:
  // `outputs`: the tensors the collective writes, the Future's value once it succeeded.
  GradsyncWork(c10d::OpType type, std::vector<at::Tensor> outputs);
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  // On the progress thread, once: the collective wrote its outputs, or failed with `error` (which wait() and the
  // Future then raise, on every rank that got it).
  void succeed();
  void fail(std::exception_ptr error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace gradsync::torch_backend
