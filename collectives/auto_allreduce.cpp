#include "collectives/auto_allreduce.hpp"
#include "collectives/allreduce_method.hpp"
#include "collectives/methods.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "trace/recorder.hpp"

namespace gradsync {
namespace {

// The candidates' names, for an error text: the registry passes itself in (methods.hpp), so auto needs no include of it.
std::string modelled_names(std::span<const AllreduceMethod> methods) {
  std::string names;
  for (const AllreduceMethod& m : methods)
    if (m.modelled()) names += fmt::format("{}{}", names.empty() ? "" : ", ", m.name);
  return names;
}

// Rank 0's model on every rank: the same inputs give the same choice everywhere.
CostModel rank0_model(const Comm& comm) {
  CostModel model;
  std::string problem;
  if (comm.rank() == 0) {
    try {
      model = find_cost_model();
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (!comm.all_ok(problem.empty()))
    throw std::runtime_error(comm.rank() == 0 ? fmt::format("auto: {}", problem)
                                              : "auto: rank 0 could not read its tuning file");
  double values[] = {
      model.intra.alpha_s,         model.intra.beta_s_per_byte, model.inter.alpha_s,
      model.inter.beta_s_per_byte, model.inter_exchange_factor, model.gamma_s_per_byte,
      model.far.alpha_s,           model.far.beta_s_per_byte,   static_cast<double>(model.hosts_per_switch)};
  check_mpi(MPI_Bcast(values, static_cast<int>(std::size(values)), MPI_DOUBLE, 0, comm.native()),
            "MPI_Bcast (auto's cost model)", comm.rank());
  std::uint64_t from_defaults = comm.rank() == 0 && model.source == default_cost_model().source;
  check_mpi(MPI_Bcast(&from_defaults, 1, MPI_UINT64_T, 0, comm.native()), "MPI_Bcast (auto's cost model)", comm.rank());
  CostModel shared;
  shared.intra = {values[0], values[1]};
  shared.inter = {values[2], values[3]};
  shared.inter_exchange_factor = values[4];
  shared.gamma_s_per_byte = values[5];
  shared.far = {values[6], values[7]};
  shared.hosts_per_switch = static_cast<int>(values[8]);
  shared.source = comm.rank() == 0 ? model.source : from_defaults ? "built-in defaults" : "rank 0's tuning file";
  return shared;
}

// Which entries of `methods` auto may choose: the modelled ones, narrowed by rank 0's GRADSYNC_AUTO_METHODS (as
// NCCL_ALGO narrows NCCL's), as a bit per entry. Rank 0's list on every rank: the candidates are planned
// collectively, so every rank must plan the same ones.
std::uint64_t rank0_candidates(const Comm& comm, std::span<const AllreduceMethod> methods) {
  if (methods.size() > 64)  // the same on every rank, before any message
    throw std::logic_error("auto: the registry outgrew the 64 bits of its candidate mask");
  const auto bit = [](std::size_t i) { return std::uint64_t{1} << i; };
  std::uint64_t mask = 0;
  std::string problem;
  if (comm.rank() == 0) {
    for (std::size_t i = 0; i < methods.size(); ++i)
      if (methods[i].modelled()) mask |= bit(i);
    if (const char* list = std::getenv("GRADSYNC_AUTO_METHODS"); list && *list) {
      std::uint64_t wanted = 0;
      std::stringstream names(list);
      for (std::string name; problem.empty() && std::getline(names, name, ',');) {
        name.erase(0, name.find_first_not_of(" \t"));  // "rd, rhd" reads as "rd,rhd"
        name.erase(name.find_last_not_of(" \t") + 1);
        const auto m = std::find_if(methods.begin(), methods.end(),
                                    [&](const AllreduceMethod& e) { return e.modelled() && e.name == name; });
        if (m == methods.end())
          problem = fmt::format("GRADSYNC_AUTO_METHODS={}: '{}' is not a method auto can choose ({})", list, name,
                                modelled_names(methods));
        else
          wanted |= bit(static_cast<std::size_t>(m - methods.begin()));
      }
      mask = wanted;
    }
  }
  if (!comm.all_ok(problem.empty()))
    throw std::runtime_error(comm.rank() == 0 ? fmt::format("auto: {}", problem)
                                              : "auto: rank 0 refused its GRADSYNC_AUTO_METHODS");
  check_mpi(MPI_Bcast(&mask, 1, MPI_UINT64_T, 0, comm.native()), "MPI_Bcast (auto's candidates)", comm.rank());
  return mask;
}

constexpr MethodOption kRanksPerHost{kRanksPerHostOption,
                                     "0: hosts found by MPI_Comm_split_type; k: groups of k consecutive ranks", 0, 0};
constexpr MethodOption kOptions[] = {kRanksPerHost};

int ranks_per_host(const Comm& comm, const AllreduceOptions& options) {
  if (const auto given = option_value(options.own, kRanksPerHost); given > 0) return static_cast<int>(given);
  const auto [fewest, most] = comm.min_max(static_cast<std::uint64_t>(comm.split_by_node().size()));
  return fewest == most ? static_cast<int>(most) : 1;  // uneven hosts: model the job as flat
}

}  // namespace

AutoAllreduce::AutoAllreduce(Comm comm, AllreduceOptions options, std::span<const AllreduceMethod> methods)
    : Allreduce(std::move(comm), options), model_(rank0_model(comm_)), ranks_per_host_(ranks_per_host(comm_, options)) {
  AllreduceOptions part = options;
  part.check_agreement = false;  // auto's own check covers the part it runs
  const std::uint64_t allowed = rank0_candidates(comm_, methods);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const AllreduceMethod& m = methods[i];
    if (!(allowed >> i & 1)) continue;                                                       // rank0_candidates' bit i
    if (m.two_level && (ranks_per_host_ <= 1 || ranks_per_host_ >= comm_.size())) continue;  // it would be the ring
    part.own = {};  // a two-level candidate is given the hosts auto found; the others take none of its options
    if (m.takes(kRanksPerHostOption)) part.own.set(kRanksPerHostOption, ranks_per_host_);
    candidates_.push_back(m.make(comm_, part));
  }
  if (candidates_.empty()) {  // the same on every rank: the list and the layout are
    const char* list = comm_.rank() == 0 ? std::getenv("GRADSYNC_AUTO_METHODS") : "(rank 0's)";
    throw std::runtime_error(fmt::format("auto: GRADSYNC_AUTO_METHODS={} leaves no method for {} ranks, {} per host",
                                         list ? list : "", comm_.size(), ranks_per_host_));
  }
}

std::size_t AutoAllreduce::choose(std::size_t bytes) const {
  std::vector<double> predicted(candidates_.size(), std::numeric_limits<double>::infinity());
  double fastest = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    if (const auto t = model_.predict(candidates_[i]->name(), bytes, comm_.size(), ranks_per_host_,
                                      candidates_[i]->options().chunk_bytes))
      fastest = std::min(fastest, predicted[i] = *t);
  }
  for (std::size_t i = 0; i < candidates_.size(); ++i)
    if (predicted[i] <= fastest * (1 + kTieMargin)) return i;
  return 0;
}

std::string_view AutoAllreduce::choice(std::size_t count, Dtype type) const {
  return candidates_[choose(count * dtype_size(type))]->name();
}

AutoChoice& AutoAllreduce::explained(std::size_t bytes) {
  AutoChoice c;
  c.object = object_id();
  c.ranks = comm_.size();
  c.ranks_per_host = ranks_per_host_;
  c.bytes = bytes;
  c.chosen = candidates_[chosen_]->name();
  for (const auto& m : candidates_)
    if (const auto t = model_.predict(m->name(), bytes, comm_.size(), ranks_per_host_, m->options().chunk_bytes))
      c.predicted_s.emplace_back(m->name(), *t);
  return auto_choice(std::move(c));
}

void AutoAllreduce::begin(std::byte* data, std::size_t count, Dtype type) {
  const std::size_t bytes = count * dtype_size(type);
  if (bytes != chosen_for_bytes_) {  // training repeats one size: the model runs once per size, not per call
    chosen_ = choose(bytes);
    chosen_for_bytes_ = bytes;
    choice_ = &explained(bytes);
  }
  current_ = candidates_[chosen_].get();
  if (options_.report_choices && comm_.rank() == 0 && reported_.insert(bytes).second) {
    std::string predictions;
    for (const auto& [name, t] : choice_->predicted_s)
      predictions += fmt::format("{}{} {:.1f} us", predictions.empty() ? "" : ", ", name, t * 1e6);
    fmt::print("auto: {} bytes on {} ranks ({} per host): {} (predicted {}; {})\n", bytes, comm_.size(), ranks_per_host_,
               current_->name(), predictions, model_.source);
    std::fflush(stdout);
  }
  begun_s_ = trace_clock_s();
  begin_of(*current_, data, count, type);
  stage_ = stage_of(*current_);
}

bool AutoAllreduce::advance() {
  if (advance_of(*current_)) {
    ++choice_->calls;
    choice_->measured_s += trace_clock_s() - begun_s_;
    return true;
  }
  stage_ = stage_of(*current_);
  return false;
}

extern const AllreduceMethod auto_allreduce_method = {
    .name = "auto",
    .summary = "per call, the modelled method the fitted cost model predicts fastest (tuning file or defaults)",
    .two_level = true,
    .options = kOptions,
    .build = [](const Comm& comm, const AllreduceOptions& o) -> std::unique_ptr<Allreduce> {
      return std::make_unique<AutoAllreduce>(comm, o, allreduce_method_table());
    },
};

}  // namespace gradsync
