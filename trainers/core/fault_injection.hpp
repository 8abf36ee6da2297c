#pragma once
// Faults that tests and experiments inject into training (--straggler, --inject-nan-step, --inject-pause), kept apart
// from what defines the run. The worker loop hands every step to one FaultHook, which does nothing unless asked.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gradsync {

struct FaultInjection {
  // Straggler: world rank `straggler_rank` sleeps `straggler_ms` every step (-1: none). With kRandomStraggler, each
  // step one worker drawn from the seed sleeps instead: a transient straggler.
  static constexpr int kRandomStraggler = -2;
  int straggler_rank = -1;
  double straggler_ms = 0;
  long nan_step = -1;    // the last rank's gradient becomes NaN at this global step (-1: never)
  long pause_step = -1;  // every worker (or pause_rank only) sleeps pause_s after this many global steps (-1: never)
  double pause_s = 0;
  int pause_rank = -1;  // the world rank that pauses alone (-1: every worker); a pause past --timeout is a hang
  // World rank `rank` SIGKILLs itself as global step `step` begins (a worker before its gradient, a bsp parameter
  // server before the round's pushes), or with `in_checkpoint` in the middle of the checkpoint set written after
  // `step` steps (a holder between its piece files and its manifest): a lost process, for the in-place recovery's
  // tests. Several may die at one step, or at different ones.
  struct Kill {
    long step = 0;
    int rank = 0;
    bool in_checkpoint = false;
  };
  std::vector<Kill> kills;
};

// The job rank --inject-kill names this process by: MPI_COMM_WORLD's rank, unless a successor (--respawn) took the
// number of the rank it replaced (set_job_rank, before its FaultHooks are made).
void set_job_rank(int rank);

// Called by every rank in the middle of writing the checkpoint set of global step `step`: SIGKILLs this process if
// an in_checkpoint Kill of `faults` names its job rank at that step.
void kill_if_named_in_checkpoint(const FaultInjection& faults, std::int64_t step);

// Checks `faults` for a run on `ranks` processes whose world ranks 0..servers-1 serve. Returns an empty string if
// they are valid, otherwise a one-line message naming the flag.
std::string validate(const FaultInjection& faults, int ranks, int servers);

// One worker's injected faults. Each step the worker calls on_gradient() between computing its gradient and checking
// it, and on_step_done() once the step is synchronized.
class FaultHook {
 public:
  // For the worker at world rank `rank` of `ranks`, index `index` among the `workers` workers; `seed` is the run's.
  FaultHook(const FaultInjection& faults, std::uint64_t seed, int rank, int ranks, int index, int workers);
  // Global step `global` (step `step` of epoch `epoch`) has just computed `grads`: turns it NaN on the last rank at
  // nan_step, and sleeps if this worker straggles in this step.
  void on_gradient(std::span<float> grads, std::int64_t global, int epoch, long step) const;
  // Global step `global` is about to begin on this worker: SIGKILLs it if a Kill names them.
  void on_step_start(std::int64_t global) const;
  // `steps_done` global steps are complete and synchronized: pauses after pause_step of them, saying so first.
  void on_step_done(std::int64_t steps_done) const;

 private:
  bool straggles(int epoch, long step) const;

  FaultInjection faults_;
  std::uint64_t seed_;
  int rank_, ranks_, index_, workers_;
  int job_rank_ = -1;  // in MPI_COMM_WORLD, read only when kills are asked for
};

}  // namespace gradsync
