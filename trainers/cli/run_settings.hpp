#pragma once
// The settings a rank of `train` runs with, as a canonical list that two ranks can compare: the flags as the parser
// resolved them, the environment variables that change what a rank computes or how it talks, and its data's
// identity. Built before MPI starts, compared by settings_agreement.hpp. No MPI here.
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace gradsync {

struct TrainConfig;

enum class SettingKind : char { flag = 'f', environment = 'e', data = 'd' };

struct Setting {
  SettingKind kind = SettingKind::flag;
  std::string name;   // "--lr", "GRADSYNC_TUNING", "train-images-idx3-ubyte"
  std::string value;  // canonical ("0.1", "on"); empty: a flag not given (and without a default), a variable unset
  bool operator==(const Setting&) const = default;
};

// Every option of `app`, after a successful parse, in its order of declaration: each value as given, else its
// default, one number spelled one way (0.10, 1e-1 and 0.1 are "0.1"; 007 is "7"), a boolean flag "on" or "off".
// Text other than a plain number is kept as given (topk:0.010 and topk:0.01 differ). Left out, as each rank's own
// by design: --help; --data (a path per host: the data's identity stands for it, data_settings); --csv, --epoch-csv
// and --quiet (rank 0 alone writes and prints them); --spec, --print-run, the --list- flags (--spec's flags are
// among the options themselves). --checkpoint (a directory per host, "%h") counts only as given or not: whether a
// rank checkpoints changes what it sends.
std::vector<Setting> flag_settings(const CLI::App& app);

// The GRADSYNC_* variables train's ranks must share: GRADSYNC_ISA (the hot loops' instruction set, whose rounding
// differs), GRADSYNC_TUNING and GRADSYNC_AUTO_METHODS (auto's cost model and candidates: ranks use rank 0's, so a
// rank given others would silently not get them). Empty is unset, as their readers take it. Left out:
// GRADSYNC_KERNEL_CACHE (where the kernel plan is kept; the plan itself is agreed, agreed_kernel_plan.hpp),
// BLIS_ARCH_TYPE (agreed with the plan), GRADSYNC_HOST (a host's own name by design).
std::vector<Setting> environment_settings();

// The identity of the four IDX files `config` reads (model/idx_identity.hpp: sizes and CRC-32s; sizes only in a
// simulation build), one setting a file. Reads the raw files through (tens of milliseconds for MNIST).
std::vector<Setting> data_settings(const TrainConfig& config);

// `settings` as one text, and back: length-prefixed fields, so that any byte may stand in a name or a value.
// settings_from_text(settings_text(s)) == s; text not made by settings_text throws std::invalid_argument.
std::string settings_text(const std::vector<Setting>& settings);
std::vector<Setting> settings_from_text(std::string_view text);

// What rank `rank`'s `theirs` says differently from rank 0's `lead`: "rank 1's settings differ from rank 0's:
// --lr 0.2 (rank 0: 0.1)", naming the first setting (in rank 0's order, then those rank 0 lacks) that differs, and
// how many more do ("... (and 2 more)"). Empty when the lists hold the same settings with the same values.
std::string describe_difference(const std::vector<Setting>& lead, const std::vector<Setting>& theirs, int rank);

}  // namespace gradsync
