#pragma once
#include <memory>
#include <set>
#include <vector>

#include "collectives/allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/auto_explain.hpp"
#include "collectives/cost_model.hpp"

namespace gradsync {

// "auto": per call, the hand-written method the cost model (cost_model.hpp) predicts fastest for this many bytes,
// ranks and ranks per host, among the registry's modelled methods (methods.hpp); NCCL's tuner, on gradsync's fitted
// alpha-beta-gamma model. Every rank uses rank 0's tuning and so makes the same choice. With
// options.report_choices rank 0 prints each choice once per size, with the predictions behind it. Every choice, its
// predictions and the chosen method's measured time go to the process's explanation log (auto_explain.hpp).
// Predictions within kTieMargin of the fastest are a tie, which the registry's order breaks (the ring first): the
// model's error is of that order, and it carries no term for what chunking gains on shared memory, where the
// chunked ring beats a near-tied rhd (docs/algorithms.md).
class AutoAllreduce final : public Allreduce {
 public:
  static constexpr double kTieMargin = 0.05;
  // Collective over `comm`: it finds the hosts (or takes its own option ranks_per_host), broadcasts rank 0's cost model,
  // and plans every candidate: the modelled entries of `methods` (the registry, methods.hpp, which passes itself),
  // in their order; rank 0's GRADSYNC_AUTO_METHODS (a comma list) narrows them for every rank. A tuning file
  // rank 0 cannot read, a name in that list auto cannot choose, or a list that leaves nothing for this layout is an
  // error (std::runtime_error) on every rank.
  AutoAllreduce(Comm comm, AllreduceOptions options, std::span<const AllreduceMethod> methods);
  std::string_view name() const override { return "auto"; }
  // The candidate chosen for `count` elements of `type`, and the model behind it.
  std::string_view choice(std::size_t count, Dtype type) const;
  const CostModel& model() const { return model_; }

 private:
  void begin(std::byte* data, std::size_t count, Dtype type) override;
  bool advance() override;
  const char* traced_method() const override { return current_ ? current_->name().data() : "auto"; }
  double predicted_seconds() const override { return choice_ ? choice_->best_predicted_s() : 0; }
  std::size_t choose(std::size_t bytes) const;
  // The explanation log's entry for `bytes`, with the candidates' predictions and the choice.
  AutoChoice& explained(std::size_t bytes);

  CostModel model_;
  int ranks_per_host_ = 1;
  std::vector<std::unique_ptr<Allreduce>> candidates_;
  std::set<std::size_t> reported_;  // sizes whose choice rank 0 has printed
  Allreduce* current_ = nullptr;
  std::size_t chosen_for_bytes_ = 0;  // the last size chosen for (begin() never sees 0 bytes) and its choice
  std::size_t chosen_ = 0;
  AutoChoice* choice_ = nullptr;  // the log's entry for that size
  double begun_s_ = 0;            // when the current operation's first stage was posted
};

}  // namespace gradsync
