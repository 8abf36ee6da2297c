#include "trainers/checkpointing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gradsync {

std::string run_fingerprint(const TrainConfig& c, const std::vector<std::size_t>& sizes, int ranks) {
  return fmt::format("model={} sync={} dataset={} batch={} ranks={} seed={} momentum={} chunk={}", fmt::join(sizes, "-"),
                     c.sync_name(), c.dataset, c.batch, ranks, c.seed, c.sgd.momentum, c.chunk_bytes);
}

std::string checkpoint_file(const std::string& dir) { return (std::filesystem::path(dir) / "gradsync.ckpt").string(); }

// A float is NaN or Inf exactly when its exponent bits are all ones. An integer max over the masked bits
// vectorizes; the float sum this replaced (acc += v - v) was one serial dependency chain, ~130 us per MLP-128 step.
bool all_finite(std::span<const float> values) {
  constexpr std::uint32_t kExponent = 0x7f800000u;
  std::uint32_t top = 0;
  for (float v : values) top = std::max(top, std::bit_cast<std::uint32_t>(v) & kExponent);
  return top != kExponent;
}

namespace {

// Broadcasts rank 0's error message (empty: none); throws it as CheckpointError on every rank.
void agree_on_error(std::string error, const Comm& world) {
  int length = static_cast<int>(error.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, 0, world.native()), "MPI_Bcast (checkpoint)", world.rank());
  if (length == 0) return;
  error.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(error.data(), length, MPI_CHAR, 0, world.native()), "MPI_Bcast (checkpoint)", world.rank());
  throw CheckpointError(error);
}

}  // namespace

void prepare_checkpoint_dir(const TrainConfig& config, const Comm& world) {
  std::string error;
  if (world.rank() == 0) {
    std::error_code ec;
    std::filesystem::create_directories(config.checkpoint_dir, ec);
    const std::filesystem::path probe = std::filesystem::path(config.checkpoint_dir) / ".gradsync-write-test";
    if (ec) {
      error = fmt::format("--checkpoint {}: cannot create the directory: {}", config.checkpoint_dir, ec.message());
    } else if (std::FILE* f = std::fopen(probe.c_str(), "w"); !f) {
      error = fmt::format("--checkpoint {}: cannot write there: {}", config.checkpoint_dir, std::strerror(errno));
    } else {
      std::fclose(f);
      std::filesystem::remove(probe, ec);
    }
  }
  agree_on_error(error, world);
}

ResumePoint load_resume_point(const TrainConfig& config, const std::vector<std::size_t>& sizes,
                              std::size_t parameter_count, const Comm& world) {
  ResumePoint point;
  std::string error;
  if (world.rank() == 0) {
    try {
      const std::string path = checkpoint_file(config.checkpoint_dir);
      Checkpoint c = read_checkpoint(path);
      check_compatible(c, run_fingerprint(config, sizes, world.size()), parameter_count, path);
      const std::size_t state_size = config.sgd.momentum != 0.0f ? parameter_count : 0;
      if (c.optimizer_state.size() != state_size)
        throw CheckpointError(fmt::format("{}: optimizer state holds {} values, this run needs {}", path,
                                          c.optimizer_state.size(), state_size));
      if (c.epoch >= config.epochs)
        throw CheckpointError(fmt::format("{}: already trained {} epoch(s); ask for more with --epochs (now {})", path,
                                          c.epoch, config.epochs));
      point = {std::move(c.params), std::move(c.optimizer_state), static_cast<int>(c.epoch), c.step};
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_error(error, world);  // every rank fails together or resumes together
  point.params.resize(parameter_count);
  point.optimizer_state.resize(config.sgd.momentum != 0.0f ? parameter_count : 0);
  std::int64_t header[2] = {point.next_epoch, point.steps_done};
  check_mpi(MPI_Bcast(header, 2, MPI_INT64_T, 0, world.native()), "MPI_Bcast (resume)", world.rank());
  point.next_epoch = static_cast<int>(header[0]);
  point.steps_done = header[1];
  for (std::vector<float>* v : {&point.params, &point.optimizer_state})
    if (!v->empty())
      check_mpi(MPI_Bcast(v->data(), world.to_int_count(v->size(), "MPI_Bcast"), MPI_FLOAT, 0, world.native()),
                "MPI_Bcast (resume)", world.rank());
  return point;
}

void save_checkpoint(const TrainConfig& config, const std::string& fingerprint, std::span<const float> params,
                     std::span<const float> optimizer_state, int epochs_done, std::int64_t steps_done) {
  const std::string path = checkpoint_file(config.checkpoint_dir);
  if (!all_finite(params) || !all_finite(optimizer_state))
    throw CheckpointError(fmt::format("{}: not written: the model holds NaN or Inf after epoch {}; the previous "
                                      "checkpoint is kept",
                                      path, epochs_done));
  Checkpoint c;
  c.config = fingerprint;
  c.params.assign(params.begin(), params.end());
  c.optimizer_state.assign(optimizer_state.begin(), optimizer_state.end());
  c.epoch = epochs_done;
  c.step = steps_done;
  c.rng = {config.seed};  // shuffles are a function of (seed, epoch): the epoch is the RNG state
  write_checkpoint(path, c);
}

}  // namespace gradsync
