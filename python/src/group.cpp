#include "group.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>

namespace gradsync::torch_backend {
namespace {

MPI_Comm make_handle(const std::vector<int>& world_ranks) {
  int world_rank = -1;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank (gradsync backend)", -1);
  MPI_Comm handle = MPI_COMM_NULL;
  if (world_ranks.empty()) {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &handle), "MPI_Comm_dup (gradsync backend)", world_rank);
    return handle;
  }
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group (gradsync backend)", world_rank);
  check_mpi(MPI_Group_incl(world, static_cast<int>(world_ranks.size()), world_ranks.data(), &members),
            "MPI_Group_incl (gradsync backend)", world_rank);
  // One tag for every group: a process creates its groups one after another on the progress thread, and torch
  // makes every rank create its groups in the same order.
  constexpr int kCreateTag = 7311;
  const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, members, kCreateTag, &handle);
  MPI_Group_free(&members);
  MPI_Group_free(&world);
  check_mpi(rc, "MPI_Comm_create_group (gradsync backend)", world_rank);
  return handle;
}

// FNV-1a: the same 64 bits for the same text on every rank.
std::int64_t fingerprint(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return static_cast<std::int64_t>(h);
}

}  // namespace

Group::Group(int rank, int size, const std::vector<int>& world_ranks, std::string method)
    : handle_(make_handle(world_ranks)), comm_(handle_), method_(std::move(method)) {
  if (comm_.rank() != rank || comm_.size() != size)
    throw std::runtime_error("gradsync backend: torch says this process is rank " + std::to_string(rank) + " of " +
                             std::to_string(size) + ", but MPI says rank " + std::to_string(comm_.rank()) + " of " +
                             std::to_string(comm_.size()) +
                             ": start every rank under mpirun and let gradsync.torch set RANK and WORLD_SIZE");
}

void Group::release() {
  methods_.clear();
  compressors_.clear();
  if (handle_ != MPI_COMM_NULL) MPI_Comm_free(&handle_);
  handle_ = MPI_COMM_NULL;
}

void Group::agree(const Call& call) const {
  const std::int64_t mine = fingerprint(call.what);
  // The largest fingerprint and the largest complement (the smallest fingerprint), and whether any rank refused.
  std::array<std::int64_t, 3> v = {mine, ~mine, call.refusal.empty() ? 0 : 1};
  comm_.max_in_place(v);
  if (v[0] == ~v[1] && v[2] == 0) return;
  // Rare path: every rank learns what every rank passed.
  std::string line = "  rank " + std::to_string(comm_.rank()) + ": " + call.what;
  if (!call.refusal.empty()) line += " -- refused: " + call.refusal;
  std::string all = comm_.gather_strings(line + "\n", 0);
  comm_.broadcast_string(all, 0);
  throw std::runtime_error(std::string("gradsync backend: ") +
                           (v[2] != 0 ? "a rank refused the collective" : "ranks called different collectives") +
                           " (no data moved):\n" + all.substr(0, all.empty() ? 0 : all.size() - 1));
}

Allreduce& Group::allreduce(const std::string& name) {
  auto it = methods_.find(name);
  if (it == methods_.end()) {
    AllreduceOptions options;
    options.check_agreement = false;
    it = methods_.emplace(name, make_allreduce(name, comm_, options)).first;
  }
  return *it->second;
}

ErrorFeedback& Group::compressor(int key, const std::string& signature, const CompressorInfo& info,
                                 const CompressorSetup& setup, std::size_t count, bool error_feedback) {
  Planned& planned = compressors_[key];
  if (!planned.feedback || planned.signature != signature) {
    planned.feedback = std::make_unique<ErrorFeedback>(info.make(setup), count, error_feedback);
    planned.signature = signature;
  }
  return *planned.feedback;
}

}  // namespace gradsync::torch_backend
