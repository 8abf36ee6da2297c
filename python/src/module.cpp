// The Python module gradsync._C: MPI's lifetime in a Python process, what gradsync.torch needs to set up
// torch.distributed's environment from MPI, and the process group class torch's backend registry builds
// (python/gradsync/torch.py).
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <stdexcept>

#include "process_group.hpp"

namespace py = pybind11;
using gradsync::torch_backend::ProcessGroupGradsync;

namespace {

bool we_initialized = false;

// Open MPI loads its transports as plugins that look libmpi's symbols up globally, but Python loads an extension
// (and so the libmpi it needs) with RTLD_LOCAL: make libmpi global before MPI_Init, as mpi4py does.
void make_mpi_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

// MPI_Init_thread with MPI_THREAD_SERIALIZED (the progress thread makes every MPI call after start-up) unless MPI is
// already running (mpi4py, say), in which case it must provide at least that. Returns the level provided.
int init_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
  } else {
    make_mpi_global();
    gradsync::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread", -1);
    we_initialized = true;
  }
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("gradsync backend: MPI provides thread level " + std::to_string(provided) +
                             ", below MPI_THREAD_SERIALIZED, which its progress thread needs");
  return provided;
}

// Frees every group's communicator, stops the progress thread and, if gradsync started MPI, finalizes it.
void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  ProcessGroupGradsync::release_all();
  if (we_initialized) MPI_Finalize();
}

// (rank, size) in MPI_COMM_WORLD and (local rank, local size) among the ranks of this node.
py::tuple world() {
  const gradsync::Comm world = gradsync::Comm::world();
  const gradsync::Comm node = world.split_by_node();
  return py::make_tuple(world.rank(), world.size(), node.rank(), node.size());
}

// Root's `text` on every rank of MPI_COMM_WORLD (for MASTER_ADDR and MASTER_PORT before torch's store exists).
std::string broadcast_text(std::string text, int root) {
  gradsync::Comm::world().broadcast_string(text, root);
  return text;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "gradsync's MPI collectives as a torch.distributed backend (import gradsync.torch)";
  py::module_::import("torch.distributed");  // registers c10d::ProcessGroup, our base class, with pybind11
  m.attr("__version__") = GRADSYNC_VERSION;
  m.def("init_mpi", &init_mpi);
  m.def("finalize_mpi", &finalize_mpi, py::call_guard<py::gil_scoped_release>());
  m.def("world", &world);
  m.def("broadcast_text", &broadcast_text, py::arg("text"), py::arg("root") = 0);
  m.def("methods", [] {
    std::vector<std::string> names;
    for (const gradsync::AllreduceMethod& x : gradsync::allreduce_method_table())
      if (x.every_rank_gets_sum()) names.emplace_back(x.name);
    return names;
  });
  m.def("compressors", [] {
    std::vector<std::string> names;
    for (const gradsync::CompressorInfo* x : gradsync::compressor_table()) names.emplace_back(x->name);
    return names;
  });
  py::class_<ProcessGroupGradsync, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupGradsync>>(m,
                                                                                                 "ProcessGroupGradsync")
      .def(py::init(
               [](int rank, int size, const std::vector<int>& world_ranks, const std::string& method, double timeout_s) {
                 py::gil_scoped_release release;  // the progress thread may be running a callback that needs the GIL
                 return c10::make_intrusive<ProcessGroupGradsync>(rank, size, world_ranks, method, timeout_s);
               }),
           py::arg("rank"), py::arg("size"), py::arg("world_ranks"), py::arg("method"), py::arg("timeout_s"))
      .def_property_readonly("method", &ProcessGroupGradsync::method)
      .def("_compressed_allreduce", &ProcessGroupGradsync::compressed_allreduce, py::arg("bucket"), py::arg("buffer"),
           py::arg("shapes"), py::arg("offsets"), py::arg("compressor"), py::arg("param"), py::arg("error_feedback"),
           py::arg("seed"), py::call_guard<py::gil_scoped_release>());
}
