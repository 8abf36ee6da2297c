// ProcessGroupGradsync: construction, the queue, and the reductions (allreduce, reduce) with broadcast and barrier.
// The gathers are gather_ops.cpp; the DDP compression hook's collective is compressed_allreduce.cpp.
#include "process_group.hpp"

#include <mutex>
#include <stdexcept>

#include "progress.hpp"
#include "tensor_types.hpp"
#include "work.hpp"

namespace gradsync::torch_backend {
namespace {

// Every live group, so that release_all() can free their communicators before MPI_Finalize.
std::mutex live_mutex;
std::vector<std::weak_ptr<Group>> live_groups;

// The methods a process group may use: every registry entry that leaves the whole sum on every rank, with its own
// options if given ("hier:ranks_per_host=2"), checked here so that a bad one fails when the group is made.
void require_method(const std::string& method) {
  const auto [name, own] = parse_method_spec(method);
  const AllreduceMethod* m = find_allreduce_method(name);
  if (m == nullptr || !m->every_rank_gets_sum())
    throw std::invalid_argument("gradsync backend: unknown method '" + name + "' (GRADSYNC_METHOD): use one of " +
                                allreduce_method_names([](const AllreduceMethod& x) { return x.every_rank_gets_sum(); }));
  check_method_options(m->name, m->options, own);
}

std::string shape_text(const at::Tensor& t) {
  return t.defined() ? dtype_text(t.scalar_type()) + "[" + std::to_string(t.numel()) + "]" : "nothing";
}

// One dense CPU tensor, or why not.
std::string single_tensor(const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1)
    return std::to_string(tensors.size()) + " tensors; the gradsync backend takes one tensor per collective";
  return placement_problem(tensors[0]);
}

// `t` itself if contiguous, else a contiguous copy that the caller copies back.
at::Tensor contiguous(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

// The type MPI reduces `type` in with `op`: bfloat16 (no MPI type) in float32, and uint8's MIN and MAX in int16, since
// Debian's MPICH 4.0 compares unsigned types as signed (collectives/mpi_type.hpp). Exact either way.
at::ScalarType reduced_as(at::ScalarType type, c10d::ReduceOp::RedOpType op) {
  if (type == at::kBFloat16) return at::kFloat;
  if (type == at::kByte && (op == c10d::ReduceOp::MIN || op == c10d::ReduceOp::MAX)) return at::kShort;
  return type;
}

int count_of(const Comm& comm, std::size_t n, const char* call) { return comm.to_int_count(n, call); }

}  // namespace

ProcessGroupGradsync::ProcessGroupGradsync(int rank, int size, const std::vector<int>& world_ranks,
                                           const std::string& method, double timeout_s)
    : c10d::ProcessGroup(rank, size), method_(method) {
  require_method(method);
  Progress::instance().run_and_wait([&] {
    group_ = std::make_shared<Group>(rank, size, world_ranks, method);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (timeout_s > 0) start_watchdog(timeout_s, world_rank);
  });
  std::lock_guard lock(live_mutex);
  live_groups.push_back(group_);
}

ProcessGroupGradsync::~ProcessGroupGradsync() {
  // The communicator is freed on the progress thread, after the group's queued collectives; after release_all()
  // there is no thread and nothing left to free.
  try {
    Progress::instance().enqueue([group = std::move(group_)] { group->release(); });
  } catch (const std::logic_error&) {
  }
}

void ProcessGroupGradsync::release_all() {
  Progress::instance().run_and_wait([] {
    std::lock_guard lock(live_mutex);
    for (auto& weak : live_groups)
      if (auto group = weak.lock()) group->release();
    live_groups.clear();
  });
  Progress::instance().shutdown();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::submit(c10d::OpType type, const char* what,
                                                            std::vector<at::Tensor> outputs, Call call,
                                                            std::function<void(Group&)> body) {
  auto work = c10::make_intrusive<GradsyncWork>(type, std::move(outputs));
  Progress::instance().enqueue([group = group_, work, what, call = std::move(call), body = std::move(body)] {
    try {
      WaitScope wait(what);
      group->agree(call);
      body(*group);
      work->succeed();
    } catch (...) {
      work->fail(std::current_exception());
    }
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::allreduce(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceOptions& opts) {
  const auto op = static_cast<c10d::ReduceOp::RedOpType>(opts.reduceOp);
  Call call{.what = "allreduce " + op_text(op) + " ", .refusal = single_tensor(tensors)};
  const at::Tensor t = tensors.empty() ? at::Tensor() : tensors[0];
  call.what += shape_text(t);
  // Which path: a gradsync method for sums it can do, MPI's MPI_Allreduce for the rest.
  const AllreduceMethod* method = find_allreduce_method(parse_method_spec(method_).first);
  std::optional<Dtype> summed;
  MPI_Datatype mpi_type = MPI_DATATYPE_NULL;
  if (call.refusal.empty()) {
    const at::ScalarType type = t.scalar_type();
    const bool is_float = at::isFloatingType(type);
    if (op == c10d::ReduceOp::SUM && method->name != "mpi") {
      summed = summed_as(type);
      if (summed && method->float32_only && *summed != Dtype::f32) summed.reset();
      if (!summed)
        call.refusal = "method " + method_ + " sums " +
                       (method->float32_only ? "float32 and bfloat16" : "float32, float64, bfloat16, int32 and int64") +
                       ", not " + dtype_text(type) + " (GRADSYNC_METHOD=mpi sums every type MPI has)";
      call.what += " with " + method_;
    } else if (mpi_op(op) == MPI_OP_NULL) {
      call.refusal = "ReduceOp." + op_text(op) +
                     " is not supported by the gradsync backend (SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR are)";
    } else if (is_float && op >= c10d::ReduceOp::BAND) {
      call.refusal = "ReduceOp." + op_text(op) + " of " + dtype_text(type) + ": bitwise ops take integer tensors";
    } else {
      mpi_type = mpi_datatype(reduced_as(type, op));
      if (mpi_type == MPI_DATATYPE_NULL || type == at::kBool)
        call.refusal = "ReduceOp." + op_text(op) + " of " + dtype_text(type) + " (MPI has no such type)";
    }
  }
  return submit(c10d::OpType::ALLREDUCE, "gradsync backend: allreduce", tensors, std::move(call),
                [t, op, summed, mpi_type, name = method_](Group& g) {
                  if (t.numel() == 0) return;
                  // bfloat16 is summed in float32 and rounded once at the end.
                  const at::ScalarType as =
                      summed ? (*summed == Dtype::f32 ? at::kFloat : t.scalar_type()) : reduced_as(t.scalar_type(), op);
                  at::Tensor data = as != t.scalar_type() ? t.to(as) : contiguous(t);
                  const auto n = static_cast<std::size_t>(data.numel());
                  if (summed) {
                    g.allreduce(name).run(data.data_ptr(), n, *summed);
                  } else {
                    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data_ptr(), count_of(g.comm(), n, "MPI_Allreduce"),
                                            mpi_type, mpi_op(op), g.comm().native()),
                              "MPI_Allreduce (gradsync backend)", g.comm().rank());
                  }
                  if (!data.is_same(t)) t.copy_(data);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::reduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::ReduceOptions& opts) {
  const auto op = static_cast<c10d::ReduceOp::RedOpType>(opts.reduceOp);
  const int root = static_cast<int>(opts.rootRank);
  Call call{.what = "reduce " + op_text(op) + " to " + std::to_string(root) + " ", .refusal = single_tensor(tensors)};
  const at::Tensor t = tensors.empty() ? at::Tensor() : tensors[0];
  call.what += shape_text(t);
  MPI_Datatype mpi_type = MPI_DATATYPE_NULL;
  if (call.refusal.empty()) {
    mpi_type = mpi_datatype(reduced_as(t.scalar_type(), op));
    if (mpi_op(op) == MPI_OP_NULL || mpi_type == MPI_DATATYPE_NULL || t.scalar_type() == at::kBool)
      call.refusal = "reduce with ReduceOp." + op_text(op) + " of " + dtype_text(t.scalar_type()) + " is not supported";
  }
  return submit(c10d::OpType::REDUCE, "gradsync backend: reduce", tensors, std::move(call),
                [t, op, root, mpi_type](Group& g) {
                  if (t.numel() == 0) return;
                  const at::ScalarType as = reduced_as(t.scalar_type(), op);
                  at::Tensor data = as != t.scalar_type() ? t.to(as) : contiguous(t);
                  const int n = count_of(g.comm(), static_cast<std::size_t>(data.numel()), "MPI_Reduce");
                  const bool at_root = g.comm().rank() == root;
                  // No MPI_IN_PLACE and no null receive buffer: Debian's MPICH 4.0 crashed on either (it copies from
                  // the in-place marker at the root, and writes into a non-root's buffer). Every rank sends `data`
                  // and receives into scratch; the root copies the sum back.
                  const at::Tensor sum = at::empty_like(data);
                  check_mpi(MPI_Reduce(data.data_ptr(), sum.data_ptr(), n, mpi_type, mpi_op(op), root, g.comm().native()),
                            "MPI_Reduce (gradsync backend)", g.comm().rank());
                  if (at_root) t.copy_(sum);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::broadcast(std::vector<at::Tensor>& tensors,
                                                               const c10d::BroadcastOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  Call call{.what = "broadcast from " + std::to_string(root) + " ", .refusal = single_tensor(tensors)};
  const at::Tensor t = tensors.empty() ? at::Tensor() : tensors[0];
  call.what += shape_text(t);
  if (call.refusal.empty() && (root < 0 || root >= getSize()))
    call.refusal = "root " + std::to_string(root) + " is not a rank of this group of " + std::to_string(getSize());
  return submit(c10d::OpType::BROADCAST, "gradsync backend: broadcast", tensors, std::move(call), [t, root](Group& g) {
    at::Tensor data = contiguous(t);
    const int bytes = count_of(g.comm(), data.nbytes(), "MPI_Bcast");
    if (bytes == 0) return;
    check_mpi(MPI_Bcast(data.data_ptr(), bytes, MPI_BYTE, root, g.comm().native()), "MPI_Bcast (gradsync backend)",
              g.comm().rank());
    if (!data.is_same(t)) t.copy_(data);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::barrier(const c10d::BarrierOptions&) {
  return submit(
      c10d::OpType::BARRIER, "gradsync backend: barrier", {}, Call{.what = "barrier", .refusal = ""},
      [](Group& g) { check_mpi(MPI_Barrier(g.comm().native()), "MPI_Barrier (gradsync backend)", g.comm().rank()); });
}

}  // namespace gradsync::torch_backend
