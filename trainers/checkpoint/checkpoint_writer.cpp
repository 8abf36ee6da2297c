// CheckpointWriter (trainers/checkpoint/checkpoint_set.hpp): each piece reaches its holders, every rank agrees on what
// each piece is, and the holders commit their files and manifests.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "collectives/allreduce.hpp"
#include "collectives/watchdog.hpp"
#include "trainers/checkpoint/checkpoint_errors.hpp"
#include "trainers/checkpoint/checkpoint_files.hpp"
#include "trainers/checkpoint/checkpoint_set.hpp"
#include "trainers/core/fault_injection.hpp"

namespace gradsync {
namespace fs = std::filesystem;
namespace {

// What each piece is, agreed by all ranks at once: for each value the max over holders of v and of -v, so a
// disagreement between holders shows as max != -max(-v). Signed 64-bit values (all of them are far below 2^63),
// with INT64_MIN from the ranks that hold no copy: Debian's MPICH 4.0 compares MPI_UINT64_T as signed under
// MPI_MAX, which broke the earlier unsigned max(v), max(~v) form.
constexpr std::size_t kFields = 5;  // params crc, optimizer crc, file crc, file bytes, not finite

}  // namespace

struct CheckpointWriter::Held {
  std::size_t k;
  ElementRange range;
  std::vector<float> params, optimizer;
  std::vector<std::uint8_t> file;  // its serialized image, once agree_on_pieces has made it
};

CheckpointWriter::CheckpointWriter(const TrainConfig& config, const Comm& world, const HostMap& hosts,
                                   std::string fingerprint, StateLayout layout, std::int64_t resumed_step)
    : config_(config), world_(world), tag_(world_.reserve_tags(2)), hosts_(hosts), fingerprint_(std::move(fingerprint)),
      layout_(layout), dir_(local_checkpoint_dir(config)) {
  std::string error;
  if (hosts_.is_leader(world_.rank())) {
    try {
      std::error_code ec;
      fs::create_directories(dir_, ec);
      if (ec)
        throw CheckpointError(fmt::format("--checkpoint {}: cannot create the directory on host {}: {}", dir_,
                                          this_host_name(), ec.message()));
      const fs::path probe = fs::path(dir_) / ".gradsync-write-test";
      const std::uint8_t byte = 0;
      write_file_atomically(probe.string(), {&byte, 1});
      fs::remove(probe, ec);
      for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
        const std::int64_t step = step_of_set_dir(e.path().filename().string());
        if (step >= 0 && step > resumed_step) fs::remove_all(e.path(), ec);
      }
    } catch (const std::exception& e) {
      error = fmt::format("on host {}: {}", this_host_name(), e.what());
    }
  }
  agree_on_errors(error, world_);
  if (world_.rank() == 0 && !config_.quiet && hosts_.hosts() < config_.checkpoint_replicas)
    fmt::print(stderr,
               "train: note: {} host(s) in this run, fewer than --checkpoint-replicas {}: each checkpoint is "
               "written on {} host(s)\n",
               hosts_.hosts(), config_.checkpoint_replicas, hosts_.hosts());
}

CheckpointWriter::~CheckpointWriter() = default;

Manifest CheckpointWriter::write(const CheckpointProgress& progress, std::span<const float> params,
                                 std::span<const float> optimizer) {
  take(progress.step, params, optimizer);
  return write_taken(progress);
}

void CheckpointWriter::take(std::int64_t step, std::span<const float> params, std::span<const float> optimizer) {
  taken_ = collect_pieces(params, optimizer, step);
  taken_step_ = step;
}

Manifest CheckpointWriter::write_taken(const CheckpointProgress& progress) {
  if (taken_step_ != progress.step)
    throw std::logic_error(
        fmt::format("checkpoint of step {} written, but step {} was taken", progress.step, taken_step_));
  std::vector<Held> held = std::move(taken_);
  taken_.clear();
  taken_step_ = -1;
  const std::vector<std::int64_t> agreed = agree_on_pieces(held, progress);
  const Manifest m = manifest_of(agreed, progress);
  std::string error;
  if (held.empty())
    kill_if_named_in_checkpoint(config_.faults, progress.step);  // --inject-kill S:R:checkpoint, as a holder would
  else
    error = commit(held, m, progress.step);
  {
    const WaitScope wait("MPI_Allreduce (checkpoint written on every holder)", progress.step);
    agree_on_errors(error, world_);  // also the barrier: every holder has committed before anyone prunes
  }
  if (hosts_.is_leader(world_.rank())) prune();
  return m;
}

// The pieces this rank holds, with their state: sharded state reaches the buddies over MPI; replicated state is
// already on every worker.
std::vector<CheckpointWriter::Held> CheckpointWriter::collect_pieces(std::span<const float> params,
                                                                     std::span<const float> optimizer,
                                                                     std::int64_t step) const {
  const int me = world_.rank();
  const std::size_t pieces = layout_.pieces();
  const std::size_t blocks = layout_.optimizer_count / std::max<std::size_t>(layout_.parameter_count, 1);
  std::vector<Held> held;
  held.reserve(pieces);  // never moved: receives land in the pieces' buffers
  std::vector<MPI_Request> requests;
  for (std::size_t k = 0; k < pieces; ++k) {
    const int owner = layout_.sharded ? static_cast<int>(k) : 0;
    const ElementRange range = partition(layout_.parameter_count, pieces, k);
    const std::vector<int> holders = hosts_.holders(owner, config_.checkpoint_replicas);
    Held* mine = nullptr;
    if (std::find(holders.begin(), holders.end(), me) != holders.end()) {
      Held& h = held.emplace_back(Held{k, range, std::vector<float>(range.size()), {}, {}});
      h.optimizer.resize(!layout_.sharded ? layout_.optimizer_count : blocks * range.size());
      if (me == owner || !layout_.sharded) {
        std::copy_n(params.begin() + static_cast<std::ptrdiff_t>(range.begin), range.size(), h.params.begin());
        if (layout_.sharded)
          copy_piece_state(optimizer, layout_.parameter_count, range, h.optimizer);
        else
          std::copy_n(optimizer.begin(), h.optimizer.size(), h.optimizer.begin());
      }
      mine = &h;
    }
    if (layout_.sharded) post_piece_transfers(owner, holders, mine, requests);
  }
  if (!requests.empty()) {
    const WaitScope wait("MPI_Waitall (checkpoint pieces to their buddies)", step);
    world_.wait_all(requests, "checkpoint pieces");
  }
  return held;
}

// Sharded state: piece k's owner sends its copy (`mine`: the owner always holds its piece) to each other holder,
// which receives it into `mine` (its copy; null on ranks that hold none).
void CheckpointWriter::post_piece_transfers(int owner, const std::vector<int>& holders, Held* mine,
                                            std::vector<MPI_Request>& requests) const {
  const int me = world_.rank();
  const bool with_optimizer = layout_.optimizer_count > 0;
  for (int holder : holders) {
    if (holder == owner) continue;
    if (me == owner) {
      requests.push_back(world_.isend(mine->params, holder, tag_));
      if (with_optimizer) requests.push_back(world_.isend(mine->optimizer, holder, tag_ + 1));
    } else if (me == holder) {
      requests.push_back(world_.irecv(mine->params, owner, tag_));
      if (with_optimizer) requests.push_back(world_.irecv(mine->optimizer, owner, tag_ + 1));
    }
  }
}

// Every holder serializes its pieces into Held::file; returns, for every piece, the max over ranks of its kFields
// values and then of their negations (kFields-value blocks, 2 per piece).
std::vector<std::int64_t> CheckpointWriter::agree_on_pieces(std::vector<Held>& held,
                                                            const CheckpointProgress& progress) const {
  std::vector<std::int64_t> agreed(2 * kFields * layout_.pieces(), std::numeric_limits<std::int64_t>::min());
  for (Held& h : held) {
    Checkpoint c;
    c.config = fingerprint_;
    c.params = h.params;
    c.optimizer_state = h.optimizer;
    c.step = progress.step;
    c.epoch = progress.next_epoch;
    c.rng = {config_.seed, h.range.begin, h.range.end, layout_.parameter_count};
    h.file = serialize_checkpoint(c, piece_file_name(h.k, layout_.pieces()));
    const std::int64_t values[kFields] = {crc32_floats(h.params), crc32_floats(h.optimizer), stored_file_crc(h.file),
                                          static_cast<std::int64_t>(h.file.size()),
                                          all_finite(h.params) && all_finite(h.optimizer) ? 0 : 1};
    for (std::size_t f = 0; f < kFields; ++f) {
      agreed[h.k * 2 * kFields + f] = values[f];
      agreed[h.k * 2 * kFields + kFields + f] = -values[f];
    }
  }
  const WaitScope wait("MPI_Allreduce (checkpoint piece checksums)", progress.step);
  world_.max_in_place(agreed);
  return agreed;
}

// The set's manifest from the agreed values (here = false for every piece). Throws CheckpointError, on every rank
// alike, if a piece's holders disagree or it holds NaN or Inf.
Manifest CheckpointWriter::manifest_of(const std::vector<std::int64_t>& agreed,
                                       const CheckpointProgress& progress) const {
  const std::size_t pieces = layout_.pieces();
  Manifest m;
  m.run = fingerprint_;
  m.step = progress.step;
  m.next_epoch = progress.next_epoch;
  m.epoch_examples = progress.epoch_examples;
  m.history = progress.history;
  m.ranks = layout_.ranks;
  m.workers = layout_.workers;
  m.servers = layout_.sharded ? layout_.servers : 0;
  m.batch = layout_.batch;
  m.param_count = layout_.parameter_count;
  m.optimizer_count = layout_.optimizer_count;
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::int64_t* max = &agreed[k * 2 * kFields];
    const std::int64_t* neg = max + kFields;
    for (std::size_t f = 0; f < kFields; ++f)
      if (max[f] != -neg[f])
        throw CheckpointError(
            fmt::format("checkpoint at step {} not written: the holders of piece {} of {} hold "
                        "different bits (replicas that should be identical are not); the previous "
                        "checkpoint is kept",
                        progress.step, k, pieces));
    if (max[4] != 0)
      throw CheckpointError(
          fmt::format("checkpoint at step {} not written: piece {} of {} holds NaN or Inf; the "
                      "previous checkpoint is kept",
                      progress.step, k, pieces));
    const ElementRange range = partition(layout_.parameter_count, pieces, k);
    const std::uint64_t floats = range.size() * sizeof(float);
    const std::uint64_t blocks = layout_.optimizer_count / std::max<std::size_t>(layout_.parameter_count, 1);
    m.params_crc = k == 0 ? static_cast<std::uint32_t>(max[0])
                          : crc32_concat(m.params_crc, static_cast<std::uint32_t>(max[0]), floats);
    m.optimizer_crc = k == 0 ? static_cast<std::uint32_t>(max[1])
                             : crc32_concat(m.optimizer_crc, static_cast<std::uint32_t>(max[1]), blocks * floats);
    m.pieces.push_back({range.begin, range.end, piece_file_name(k, pieces), static_cast<std::uint64_t>(max[3]),
                        static_cast<std::uint32_t>(max[2]), false});
  }
  return m;
}

// A holder writes its pieces' files, then its manifest naming them as here. Returns what failed, or "".
std::string CheckpointWriter::commit(const std::vector<Held>& held, const Manifest& m, std::int64_t step) const {
  const int me = world_.rank();
  try {
    const fs::path set = fs::path(dir_) / set_dir_name(step);
    const bool created = fs::create_directories(set);
    if (created) fsync_dir(dir_);  // the set's directory entry itself must survive a crash
    Manifest mine = m;
    for (const Held& h : held) {
      write_file_atomically((set / m.pieces[h.k].file).string(), h.file);
      mine.pieces[h.k].here = true;
    }
    kill_if_named_in_checkpoint(config_.faults, step);  // --inject-kill S:R:checkpoint: files written, no manifest
    const std::string text = serialize_manifest(mine);
    write_file_atomically((set / manifest_file_name(me)).string(),
                          {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  } catch (const std::exception& e) {
    return fmt::format("checkpoint at step {} on host {} (rank {}): {}", step, this_host_name(), me, e.what());
  }
  return {};
}

void CheckpointWriter::prune() {
  std::vector<std::pair<std::int64_t, fs::path>> sets;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    const std::int64_t step = step_of_set_dir(e.path().filename().string());
    if (step >= 0) sets.emplace_back(step, e.path());
  }
  std::sort(sets.rbegin(), sets.rend());
  int committed = 0;
  for (const auto& [step, path] : sets) {
    bool has_manifest = false;
    for (const fs::directory_entry& f : fs::directory_iterator(path, ec))
      has_manifest |= f.path().filename().string().rfind("manifest-r", 0) == 0;
    if (committed >= kKeptSets)
      fs::remove_all(path, ec);
    else if (has_manifest)
      ++committed;
  }
}

}  // namespace gradsync
