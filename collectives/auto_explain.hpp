#pragma once
// Why auto chose what it chose: per (auto object, size), the method chosen, every candidate's predicted time and the
// chosen method's measured time. A process-wide log that every AutoAllreduce writes into and that `train --explain`
// and `bench_allreduce --explain` print at the end. Local: no communication.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsync {

struct AutoChoice {
  std::uint32_t object = 0;  // the AutoAllreduce (Allreduce::object_id): one per communicator and use
  int ranks = 0, ranks_per_host = 0;
  std::size_t bytes = 0;
  std::string chosen;
  std::vector<std::pair<std::string, double>> predicted_s;  // every candidate the model covers, in registry order
  std::size_t calls = 0;                                    // operations of this size that ran to completion
  double measured_s = 0;                                    // their summed time, from begin to the last stage
  double best_predicted_s() const;
  // Measured mean over the fastest prediction (0 before any call completed).
  double regret() const;
};

// The entry for (fresh.object, fresh.bytes): the one logged before, or `fresh`, logged now. The reference stays valid
// for the life of the process; one thread at a time updates a given entry (the one that runs its object).
AutoChoice& auto_choice(AutoChoice fresh);
// A copy of every entry so far, by object then size.
std::vector<AutoChoice> auto_choices();
// The table `--explain` prints: one row per entry with every candidate's prediction, the choice, the measured mean
// and the regret (measured / best predicted).
std::string format_auto_choices(const std::vector<AutoChoice>& choices);

}  // namespace gradsync
