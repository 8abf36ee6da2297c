#pragma once
// What identifies the four IDX files of a dataset folder without parsing them: for comparing the data two processes
// were given (trainers/cli/settings_agreement.hpp) before either loads it.
#include <string>
#include <utility>
#include <vector>

namespace gradsync {

// For each of the four files load_idx_dataset reads from `dir` ({train,t10k}-{images-idx3,labels-idx1}-ubyte, the
// raw name before the `.gz` one, as load_idx_dataset picks them), in that order: {base name, identity}. The
// identity is of the IDX bytes the reader gets, however they are stored: "47040016 bytes, CRC-32 0x...", counted
// over the file, or for a gzip file (told by its magic, as read_idx tells it) taken from its trailer, which holds
// the size (mod 2^32) and CRC-32 of what it inflates to (the reader checks them) — so a raw file and its .gz agree,
// and a .gz costs no inflating. "missing" when neither name exists; "unreadable (why)" when the file cannot be read.
// Equal identities mean the same bytes up to CRC-32's collisions (accidents, not an attacker; a gzip file of
// several members shows its last member's). `with_checksum` false gives sizes only and reads no raw file (a
// simulation's thousand ranks share one process and one set of files). Never throws for a missing or unreadable
// file: load_idx_dataset reports those later, with the fix.
std::vector<std::pair<std::string, std::string>> idx_files_identity(const std::string& dir, bool with_checksum = true);

}  // namespace gradsync
