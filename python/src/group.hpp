#pragma once
// One process group's MPI side, used on the progress thread only (progress.hpp): its communicator, the allreduce
// methods planned on it, the compressors of a DDP hook, and the check that every rank called the same collective.
#include <gradsync/gradsync.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gradsync::torch_backend {

// What a rank passed to one collective, checked against every other rank's before data moves.
struct Call {
  std::string what;     // "allreduce SUM float32[1000] with ring": equal on every rank, or the ranks disagree
  std::string refusal;  // empty, or why this rank cannot run it ("tensor on meta, not the CPU")
};

class Group {
 public:
  // Collective over the members (MPI_Comm_create_group on MPI_COMM_WORLD: non-members take no part, as
  // torch.distributed.new_group calls the backend on members only). `world_ranks`: the members' ranks in
  // MPI_COMM_WORLD, in group-rank order; empty: the whole world (a duplicate of MPI_COMM_WORLD). Throws
  // std::runtime_error if `rank`/`size` (what torch was told) are not this process's rank and size in it.
  Group(int rank, int size, const std::vector<int>& world_ranks, std::string method);
  ~Group() { release(); }
  // Frees the methods, compressors and communicator (on the progress thread, before MPI_Finalize); idempotent.
  void release();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  const Comm& comm() const { return comm_; }
  const std::string& method() const { return method_; }
  // Collective: returns if every rank passed the same call and none refused it; otherwise throws, on every rank,
  // one std::runtime_error naming what each rank passed (one MPI_Allreduce; the names travel only on a failure).
  void agree(const Call& call) const;
  // The allreduce `name` planned on this group (collective the first time, which every rank reaches in the same
  // order because collectives run in queue order). Its own agreement check is off: agree() did it.
  Allreduce& allreduce(const std::string& name);
  // DDP hook state: the compressor with error feedback planned for bucket `key` with `signature`; planned again
  // (collective) when the bucket's signature changes (DDP rebuilds its buckets after the first step).
  ErrorFeedback& compressor(int key, const std::string& signature, const CompressorInfo& info,
                            const CompressorSetup& setup, std::size_t count, bool error_feedback);

 private:
  MPI_Comm handle_ = MPI_COMM_NULL;
  Comm comm_;
  std::string method_;
  std::map<std::string, std::unique_ptr<Allreduce>> methods_;
  struct Planned {
    std::string signature;
    std::unique_ptr<ErrorFeedback> feedback;
  };
  std::map<int, Planned> compressors_;
};

}  // namespace gradsync::torch_backend
