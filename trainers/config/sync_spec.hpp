#pragma once
// A synchronizer spelled as one word, for drivers that run train once per word (train --spec) and programs that
// take several (bench_sync --methods): train's --sync value, then modifiers joined by '+', each one of train's flags:
//   ps+mode=ssp+staleness=2+servers=2   --sync ps --ps-mode ssp --staleness 2 --servers 2
//   gossip+topology=exp1+async          --sync gossip --topology exp1 --async
//   ring+average=8+outer-lr=0.7+outer-momentum=0.9
//   ring+buckets, mpi+pipe+thread       --buckets, --pipeline 1, --progress thread
//   ring+compress=powersgd:4+noef       --compress powersgd:4 --error-feedback 0
// A family's modifiers are its registry entry's (SyncFamilyInfo::spec_modifiers); the overlap and compression ones
// are every family's, as their flags are. This file only turns words into flags: train's parser (cli.hpp) checks
// their values and makes typed values of them, so a spec is exactly the run its flags are, and its name is the one
// train gives that run (TrainConfig::sync_name), never parsed back. A program may take bases and modifiers of its
// own (bench_sync: xcore, +traced), which train does not.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gradsync {

// The words a program takes besides train's.
struct SpecWords {
  std::span<const std::string_view> bases = {};      // instead of a --sync value (bench_sync: xcore)
  std::span<const std::string_view> modifiers = {};  // bare words of its own (bench_sync: traced)
};

struct SyncSpec {
  std::string text;                   // as written
  std::string_view own_base;          // one of the program's SpecWords::bases, else empty
  std::vector<std::string> flags;     // train's flags it spells, "--sync METHOD" first; none with an own base
  std::vector<std::string_view> own;  // the program's own modifiers it has
  // Each train modifier as written ("mode=ssp") and the flag it stands for, in the spec's order.
  std::vector<std::pair<std::string, std::string_view>> modifiers;

  bool has(std::string_view own_modifier) const;
  // `message` (an error of train's about these flags) after the quoted spec and, when the message names a flag a
  // modifier stands for, that modifier: "'ps+mode=xyz' (+mode=xyz): --ps-mode: unknown mode 'xyz' ...".
  std::string explain(std::string_view message) const;
};

// The spec `text` spells, or nullopt with `problem` set to a one-line message that quotes `text`. Checks the words
// only: the values are train's to check (parse_train_args on the flags, cli.hpp).
std::optional<SyncSpec> parse_sync_spec(std::string_view text, std::string& problem, SpecWords own = {});
// The grammar, each family's modifiers with the flags they stand for, for --help and errors.
std::string sync_spec_grammar();
// Every flag a modifier stands for, and --sync: the flags a spec sets, which train --spec refuses beside it.
std::vector<std::string_view> sync_spec_flags();

}  // namespace gradsync
