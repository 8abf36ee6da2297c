#include "trainers/core/fault_injection.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

#include "model/rng.hpp"

namespace gradsync {

std::string validate(const FaultInjection& f, int ranks, int servers) {
  if (f.straggler_rank >= ranks)
    return fmt::format("--straggler: rank {} does not exist ({} ranks)", f.straggler_rank, ranks);
  if (f.straggler_rank != -1 && !(f.straggler_ms >= 0 && f.straggler_ms < 1e7))
    return "--straggler: milliseconds must be a number from 0 to 1e7";
  if (f.straggler_rank >= 0 && f.straggler_rank < servers)
    return fmt::format("--straggler: rank {} is a parameter server (ranks 0..{}); choose a worker rank", f.straggler_rank,
                       servers - 1);
  if (f.pause_rank >= ranks || (f.pause_rank >= 0 && f.pause_rank < servers))
    return fmt::format("--inject-pause: rank {} is not a worker rank ({}..{})", f.pause_rank, servers, ranks - 1);
  for (const FaultInjection::Kill& k : f.kills)
    if (k.rank >= ranks || k.rank < 0)
      return fmt::format("--inject-kill: rank {} is not a rank (0..{})", k.rank, ranks - 1);
  return {};
}

namespace {
int g_job_rank = -1;  // set_job_rank's, or -1: MPI_COMM_WORLD's

// Kills name ranks as the job started them: MPI_COMM_WORLD's numbering, which a re-formed run's world renumbers.
int job_rank() {
  if (g_job_rank >= 0) return g_job_rank;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

[[noreturn]] void kill_self(int rank, const char* when, std::int64_t step) {
  fmt::print(stderr, "gradsync: rank {} killing itself {} {} (--inject-kill)\n", rank, when, step);
  std::fflush(stderr);
  std::raise(SIGKILL);
  std::abort();  // SIGKILL cannot be caught: never reached
}
}  // namespace

void set_job_rank(int rank) { g_job_rank = rank; }

void kill_if_named_in_checkpoint(const FaultInjection& faults, std::int64_t step) {
  for (const FaultInjection::Kill& k : faults.kills)
    if (k.in_checkpoint && k.step == step && k.rank == job_rank())
      kill_self(k.rank, "writing the checkpoint of step", step);
}

FaultHook::FaultHook(const FaultInjection& faults, std::uint64_t seed, int rank, int ranks, int index, int workers)
    : faults_(faults), seed_(seed), rank_(rank), ranks_(ranks), index_(index), workers_(workers) {
  if (!faults_.kills.empty()) job_rank_ = job_rank();
}

void FaultHook::on_step_start(std::int64_t global) const {
  for (const FaultInjection::Kill& k : faults_.kills)
    if (!k.in_checkpoint && k.step == global && k.rank == job_rank_) kill_self(job_rank_, "at step", global);
}

void FaultHook::on_gradient(std::span<float> grads, std::int64_t global, int epoch, long step) const {
  if (global == faults_.nan_step && rank_ == ranks_ - 1 && !grads.empty())
    grads[0] = std::numeric_limits<float>::quiet_NaN();
  if (faults_.straggler_rank != -1 && faults_.straggler_ms > 0 && straggles(epoch, step))
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(faults_.straggler_ms));
}

// A fixed point at which a test kills or cuts a host. Every worker says so first.
void FaultHook::on_step_done(std::int64_t steps_done) const {
  if (steps_done != faults_.pause_step || (faults_.pause_rank >= 0 && rank_ != faults_.pause_rank)) return;
  fmt::print(stderr, "gradsync: rank {} pausing after step {} for {} s (--inject-pause)\n", rank_, steps_done,
             faults_.pause_s);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::duration<double>(faults_.pause_s));
}

// A fixed straggler sleeps every step; a random one is drawn per step, the same on every worker, from the seed.
bool FaultHook::straggles(int epoch, long step) const {
  if (faults_.straggler_rank != FaultInjection::kRandomStraggler) return rank_ == faults_.straggler_rank;
  Rng rng(seed_ ^ 0x5742A661ULL, static_cast<std::uint64_t>(epoch) * 1000003ULL + static_cast<std::uint64_t>(step));
  return rng.below(static_cast<std::size_t>(workers_)) == static_cast<std::size_t>(index_);
}

}  // namespace gradsync
