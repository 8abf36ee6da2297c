#include "work.hpp"

namespace gradsync::torch_backend {

GradsyncWork::GradsyncWork(c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(-1, type), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void GradsyncWork::succeed() {
  // The Future first: DDP's callbacks chained on it run here, on the progress thread, before wait() returns.
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

void GradsyncWork::fail(std::exception_ptr error) {
  future_->setError(error);
  finish(error);
}

}  // namespace gradsync::torch_backend
