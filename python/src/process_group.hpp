#pragma once
// The torch.distributed backend "gradsync": a c10d::ProcessGroup whose collectives return at once and run on the
// process's progress thread (progress.hpp), in the order each rank called them. Sums of float32, float64, int32,
// int64 and bfloat16 (widened to float32) go through the group's gradsync method (ring, rd, rhd, hier, auto,
// ring-bf16, mpi); MIN, MAX, PRODUCT and the bitwise ops, broadcast, the gathers, scatter, reduce and barrier go
// through MPI's own calls. Every collective first checks that every rank called the same one with the same sizes,
// and that no rank refused it (a tensor not on the CPU, a type the method cannot sum): otherwise every rank's Work
// fails with one message naming what each rank passed, and no data moves. What it does not implement (send, recv,
// alltoall, reduce_scatter, ...) raises torch's "ProcessGroup gradsync does not support <op>" at the call.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "group.hpp"

namespace gradsync::torch_backend {

class ProcessGroupGradsync final : public c10d::ProcessGroup {
 public:
  // Collective over the members, which torch calls it on (MPI_Comm_create_group): `world_ranks` are the members'
  // ranks in MPI_COMM_WORLD in group order, empty for the default group. `method` is a name of the allreduce
  // registry whose every rank ends with the sum. `timeout_s` > 0 arms gradsync's watchdog: a collective that waits
  // longer ends the job, naming where it waited. Throws if MPI disagrees with `rank` or `size`, or `method` is
  // unknown. Blocks until the progress thread has made the communicator (call without holding the GIL).
  ProcessGroupGradsync(int rank, int size, const std::vector<int>& world_ranks, const std::string& method,
                       double timeout_s);
  ~ProcessGroupGradsync() override;

  const std::string getBackendName() const override { return "gradsync"; }
  const std::string& method() const { return method_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // A DDP bucket summed through gradsync's compressor `compressor` (powersgd, topk, sign) with parameter `param`,
  // with or without error feedback, then divided by the group's size: the Work's output is `buffer` (float32, CPU,
  // contiguous), averaged. `shapes` and `offsets` (elements from the buffer's start) describe the bucket's
  // gradients; the compressor is planned per `bucket` and again when that bucket's layout changes. Collective, like
  // allreduce; the same `seed` on every rank.
  c10::intrusive_ptr<c10d::Work> compressed_allreduce(int bucket, at::Tensor buffer,
                                                      const std::vector<std::vector<int64_t>>& shapes,
                                                      const std::vector<int64_t>& offsets, const std::string& compressor,
                                                      double param, bool error_feedback, int64_t seed);

  // Runs the queued collectives, frees every live group's communicator and stops the progress thread; for
  // MPI_Finalize (module.cpp). A group destroyed later frees nothing.
  static void release_all();

 private:
  // Queues `body` behind the group's agreement check on `call`; the Work completes with `outputs` or its error.
  // `what` names the wait for the watchdog (a string literal).
  c10::intrusive_ptr<c10d::Work> submit(c10d::OpType type, const char* what, std::vector<at::Tensor> outputs, Call call,
                                        std::function<void(Group&)> body);

  std::string method_;
  std::shared_ptr<Group> group_;
};

}  // namespace gradsync::torch_backend
