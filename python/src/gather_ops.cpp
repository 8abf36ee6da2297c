// ProcessGroupGradsync's gathers and scatter: bytes moved by MPI's own calls (any element type), after the group's
// agreement check (every rank passed the same type and sizes). All tensors of one call have one type and size.
#include <string>

#include "process_group.hpp"
#include "tensor_types.hpp"

namespace gradsync::torch_backend {
namespace {

std::string shape_text(const at::Tensor& t) {
  return t.defined() ? dtype_text(t.scalar_type()) + "[" + std::to_string(t.numel()) + "]" : "nothing";
}

// Empty, or why `list` is not `size` CPU tensors of `like`'s type and element count.
std::string list_problem(const std::vector<at::Tensor>& list, std::size_t size, const at::Tensor& like,
                         const char* which) {
  if (list.size() != size)
    return std::string(which) + " holds " + std::to_string(list.size()) + " tensors for a group of " +
           std::to_string(size);
  for (const at::Tensor& t : list) {
    std::string problem = placement_problem(t);
    if (!problem.empty()) return std::string(which) + ": " + problem;
    if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel())
      return std::string(which) + " holds a " + shape_text(t) + " for an input of " + shape_text(like);
  }
  return "";
}

std::string one_input(const std::vector<at::Tensor>& inputs) {
  if (inputs.size() != 1) return std::to_string(inputs.size()) + " input tensors; the gradsync backend takes one";
  return placement_problem(inputs[0]);
}

void check(int rc, const char* call, const Comm& comm) { check_mpi(rc, call, comm.rank()); }

// The `r`-th of `parts` equal slices of `flat`, shaped as `like`.
at::Tensor slice(const at::Tensor& flat, std::int64_t r, const at::Tensor& like) {
  return flat.narrow(0, r * like.numel(), like.numel()).view(like.sizes());
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions&) {
  Call call{.what = "allgather ", .refusal = one_input(inputs)};
  const at::Tensor in = inputs.empty() ? at::Tensor() : inputs[0];
  call.what += shape_text(in);
  if (call.refusal.empty())
    call.refusal = outputs.size() != 1 ? "the output must be one list of tensors"
                                       : list_problem(outputs[0], static_cast<std::size_t>(getSize()), in, "the output");
  std::vector<at::Tensor> outs = outputs.size() == 1 ? outputs[0] : std::vector<at::Tensor>{};
  return submit(c10d::OpType::ALLGATHER, "gradsync backend: allgather", outs, std::move(call), [in, outs](Group& g) {
    const at::Tensor data = in.contiguous();
    const int bytes = g.comm().to_int_count(data.nbytes(), "MPI_Allgather");
    if (bytes == 0) return;
    at::Tensor flat = at::empty({static_cast<std::int64_t>(outs.size()) * in.numel()}, in.options());
    check(MPI_Allgather(data.data_ptr(), bytes, MPI_BYTE, flat.data_ptr(), bytes, MPI_BYTE, g.comm().native()),
          "MPI_Allgather (gradsync backend)", g.comm());
    for (std::size_t r = 0; r < outs.size(); ++r) outs[r].copy_(slice(flat, static_cast<std::int64_t>(r), outs[r]));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::AllgatherOptions&) {
  Call call{.what = "allgather_base " + shape_text(input), .refusal = placement_problem(input)};
  if (call.refusal.empty()) call.refusal = placement_problem(output);
  if (call.refusal.empty() &&
      (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * getSize()))
    call.refusal = "the output is a " + shape_text(output) + ", not " + std::to_string(getSize()) + " times the input";
  return submit(
      c10d::OpType::_ALLGATHER_BASE, "gradsync backend: allgather", {output}, std::move(call),
      [in = input, out = output](Group& g) {
        const at::Tensor data = in.contiguous();
        at::Tensor flat = out.is_contiguous() ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
        const int bytes = g.comm().to_int_count(data.nbytes(), "MPI_Allgather");
        if (bytes == 0) return;
        check(MPI_Allgather(data.data_ptr(), bytes, MPI_BYTE, flat.data_ptr(), bytes, MPI_BYTE, g.comm().native()),
              "MPI_Allgather (gradsync backend)", g.comm());
        if (!flat.is_same(out)) out.copy_(flat);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::GatherOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  Call call{.what = "gather to " + std::to_string(root) + " ", .refusal = one_input(inputs)};
  const at::Tensor in = inputs.empty() ? at::Tensor() : inputs[0];
  call.what += shape_text(in);
  const bool at_root = getRank() == root;
  std::vector<at::Tensor> outs = outputs.size() == 1 ? outputs[0] : std::vector<at::Tensor>{};
  if (call.refusal.empty() && at_root)
    call.refusal = outputs.size() != 1 ? "the root's output must be one list of tensors"
                                       : list_problem(outs, static_cast<std::size_t>(getSize()), in, "the output");
  if (call.refusal.empty() && !at_root && !outs.empty()) call.refusal = "only the root passes outputs to gather";
  return submit(c10d::OpType::GATHER, "gradsync backend: gather", outs, std::move(call), [in, outs, root](Group& g) {
    const at::Tensor data = in.contiguous();
    const int bytes = g.comm().to_int_count(data.nbytes(), "MPI_Gather");
    if (bytes == 0) return;
    at::Tensor flat =
        outs.empty() ? at::Tensor() : at::empty({static_cast<std::int64_t>(outs.size()) * in.numel()}, in.options());
    check(MPI_Gather(data.data_ptr(), bytes, MPI_BYTE, outs.empty() ? nullptr : flat.data_ptr(), bytes, MPI_BYTE, root,
                     g.comm().native()),
          "MPI_Gather (gradsync backend)", g.comm());
    for (std::size_t r = 0; r < outs.size(); ++r) outs[r].copy_(slice(flat, static_cast<std::int64_t>(r), outs[r]));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupGradsync::scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ScatterOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  Call call{.what = "scatter from " + std::to_string(root) + " ", .refusal = one_input(outputs)};
  const at::Tensor out = outputs.empty() ? at::Tensor() : outputs[0];
  call.what += shape_text(out);
  const bool at_root = getRank() == root;
  std::vector<at::Tensor> ins = inputs.size() == 1 ? inputs[0] : std::vector<at::Tensor>{};
  if (call.refusal.empty() && at_root)
    call.refusal = inputs.size() != 1 ? "the root's input must be one list of tensors"
                                      : list_problem(ins, static_cast<std::size_t>(getSize()), out, "the input");
  if (call.refusal.empty() && !at_root && !ins.empty()) call.refusal = "only the root passes inputs to scatter";
  return submit(c10d::OpType::SCATTER, "gradsync backend: scatter", outputs, std::move(call), [out, ins, root](Group& g) {
    at::Tensor data = out.is_contiguous() ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
    const int bytes = g.comm().to_int_count(data.nbytes(), "MPI_Scatter");
    if (bytes == 0) return;
    at::Tensor flat;
    if (!ins.empty()) {
      flat = at::empty({static_cast<std::int64_t>(ins.size()) * out.numel()}, out.options());
      for (std::size_t r = 0; r < ins.size(); ++r) slice(flat, static_cast<std::int64_t>(r), ins[r]).copy_(ins[r]);
    }
    check(MPI_Scatter(ins.empty() ? nullptr : flat.data_ptr(), bytes, MPI_BYTE, data.data_ptr(), bytes, MPI_BYTE, root,
                      g.comm().native()),
          "MPI_Scatter (gradsync backend)", g.comm());
    if (!data.is_same(out)) out.copy_(data);
  });
}

}  // namespace gradsync::torch_backend
