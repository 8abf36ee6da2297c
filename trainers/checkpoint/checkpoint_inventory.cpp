#include "trainers/checkpoint/checkpoint_inventory.hpp"
#include "trainers/core/sync_registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <utility>

#include "trainers/checkpoint/checkpoint_files.hpp"
#include "trainers/checkpoint/checkpointing.hpp"

namespace gradsync {
namespace fs = std::filesystem;

// The lines, one per finding:
//   M <step> <rank> <manifest path> \x1f <manifest text, '\n' as \x1e>
//   V <step> <piece> <crc> <rank> <path>      a valid copy of that piece, readable by that rank
//   P <step> <text>                            a file, or a set, that cannot be used, and why
std::string inventory(const std::string& dir, int rank) {
  std::string out;
  const std::string host = this_host_name();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fmt::format("P -1 {}:{}: no such directory\n", host, dir);
  int sets = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::int64_t step = step_of_set_dir(e.path().filename().string());
    if (step < 0) continue;
    ++sets;
    std::vector<fs::path> manifests;
    for (const fs::directory_entry& f : fs::directory_iterator(e.path(), ec))
      if (f.path().filename().string().rfind("manifest-r", 0) == 0) manifests.push_back(f.path());
    if (manifests.empty()) {
      out +=
          fmt::format("P {} {}:{}: no manifest: torn (the pieces were never committed)\n", step, host, e.path().string());
      continue;
    }
    for (const fs::path& mp : manifests) {
      Manifest m;
      try {
        m = read_manifest(mp.string());
      } catch (const std::exception& x) {
        out += fmt::format("P {} {}:{}\n", step, host, x.what());
        continue;
      }
      if (m.step != step) {
        out +=
            fmt::format("P {} {}:{}: manifest of step {} in the set of step {}\n", step, host, mp.string(), m.step, step);
        continue;
      }
      std::string text = serialize_manifest(m);
      std::replace(text.begin(), text.end(), '\n', '\x1e');
      out += fmt::format("M {} {} {}:{} \x1f{}\n", step, rank, host, mp.string(), text);
      for (std::size_t k = 0; k < m.pieces.size(); ++k) {
        if (!m.pieces[k].here) continue;
        const fs::path piece = e.path() / m.pieces[k].file;
        try {
          read_piece(piece, m, k);
          out += fmt::format("V {} {} {:08x} {} {}\n", step, k, m.pieces[k].crc, rank, piece.string());
        } catch (const std::exception& x) {
          out += fmt::format("P {} {}:{}\n", step, host, x.what());
        }
      }
    }
  }
  if (sets == 0) out += fmt::format("P -1 {}:{}: no checkpoint sets in it\n", host, dir);
  return out;
}

namespace {

// Every host's inventory lines, merged.
struct Inventories {
  std::map<std::int64_t, std::vector<std::pair<std::string, Manifest>>, std::greater<>> manifests;  // newest first
  std::map<std::int64_t, std::vector<std::string>> problems;                                        // per set
  std::vector<std::string> general;                                                                 // of no set
  std::map<std::pair<std::int64_t, std::size_t>, std::vector<std::pair<std::uint32_t, PieceCopy>>> valid;
};

Inventories parse_inventories(const std::string& all) {
  Inventories inv;
  std::istringstream in(all);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    char kind = 0;
    long long step = 0;
    s >> kind >> step;
    if (kind == 'P') {
      std::string rest;
      std::getline(s >> std::ws, rest);
      (step < 0 ? inv.general : inv.problems[step]).push_back(rest);
    } else if (kind == 'M') {
      int rank = 0;
      std::string where;
      s >> rank >> where;
      std::string text = line.substr(line.find('\x1f') + 1);
      std::replace(text.begin(), text.end(), '\x1e', '\n');
      inv.manifests[step].emplace_back(where, parse_manifest(text, where));
    } else if (kind == 'V') {
      std::size_t k = 0;
      unsigned crc = 0;
      PieceCopy c{};
      s >> k >> std::hex >> crc >> std::dec >> c.rank >> c.path;
      inv.valid[{step, k}].emplace_back(crc, c);
    }
  }
  return inv;
}

// A valid copy of every piece of `c`'s manifest into c.sources; false, with the first piece that has none noted
// among the set's problems, if some piece has none.
bool find_sources(SetChoice& c, Inventories& inv) {
  const Manifest& ref = c.manifest;
  for (std::size_t k = 0; k < ref.pieces.size(); ++k) {
    const auto& copies = inv.valid[{c.step, k}];
    const auto good =
        std::find_if(copies.begin(), copies.end(), [&](const auto& v) { return v.first == ref.pieces[k].crc; });
    if (good == copies.end()) {
      inv.problems[c.step].push_back(
          fmt::format("piece {} of {} ({}): no valid copy on the hosts left", k, ref.pieces.size(), ref.pieces[k].file));
      return false;
    }
    c.sources.push_back(good->second);
  }
  return true;
}

// Why no set could be chosen: every problem found, newest set first, and a foreign run's set if one was seen.
std::string no_complete_set(const Inventories& inv, const std::string& foreign, const TrainConfig& config,
                            const HostMap& hosts) {
  std::string hosts_list;
  for (int h = 0; h < hosts.hosts(); ++h) hosts_list += (h ? ", " : "") + hosts.name(h);
  std::string error =
      fmt::format("--resume: no complete checkpoint in --checkpoint {} on the {} host(s) of this run ({})",
                  config.checkpoint_dir, hosts.hosts(), hosts_list);
  for (const std::string& g : inv.general) error += "\n  " + g;
  for (auto it = inv.problems.rbegin(); it != inv.problems.rend(); ++it)
    for (const std::string& p : it->second) error += fmt::format("\n  step {}: {}", it->first, p);
  if (!foreign.empty()) error += "\n  " + foreign;
  return error;
}

}  // namespace

SetChoice choose_newest_set(const std::string& all, const TrainConfig& config, const HostMap& hosts,
                            const std::string& fingerprint, std::string& error) {
  Inventories inv = parse_inventories(all);
  std::string foreign;
  for (const auto& [step, list] : inv.manifests) {
    const auto ours = std::find_if(list.begin(), list.end(), [&](const auto& m) { return m.second.run == fingerprint; });
    if (ours == list.end()) {
      if (foreign.empty())
        foreign = fmt::format("{}: checkpoint was written by a different run: expected \"{}\", found \"{}\"",
                              list.front().first, fingerprint, list.front().second.run);
      continue;
    }
    SetChoice c{step, ours->second, ours->first, {}, {}};
    if (!find_sources(c, inv)) continue;
    for (const auto& [p_step, found] : inv.problems)
      if (p_step >= step)
        for (const std::string& p : found) c.notes += fmt::format("\n  step {}: {}", p_step, p);
    return c;
  }
  error = !foreign.empty() && inv.problems.empty() ? foreign : no_complete_set(inv, foreign, config, hosts);
  return {};
}

std::string incompatibility(const SetChoice& c, const TrainConfig& config, std::size_t parameter_count) {
  const Manifest& m = c.manifest;
  if (m.param_count != parameter_count)
    return fmt::format("{}: checkpoint holds {} parameters, this run's model has {}", c.manifest_at, m.param_count,
                       parameter_count);
  // With compression, or a family with state of its own (gossip's replicas), the synchronizer's state follows and its
  // size depends on the checkpoint's worker count: the synchronizer checks it when it loads it
  // (Synchronizer::load_state).
  const std::size_t state = config.sgd.momentum != 0.0f ? parameter_count : 0;
  const bool own_state = config.compression.enabled() || sync_family(config.sync.family).build.state_size != nullptr;
  if (own_state ? m.optimizer_count < state : m.optimizer_count != state)
    return fmt::format("{}: optimizer state holds {} values, this run needs {}", c.manifest_at, m.optimizer_count, state);
  const std::uint64_t global = m.batch * static_cast<std::uint64_t>(m.workers);
  if (config.global_batch > 0 && config.global_batch != global)
    return fmt::format(
        "{}: --global-batch {}, but the checkpoint's run had a global batch of {} ({} per worker on {} "
        "workers); use --global-batch {}",
        c.manifest_at, config.global_batch, global, m.batch, m.workers, global);
  if (config.global_batch == 0 && config.batch != m.batch)
    return fmt::format(
        "{}: --batch {}, but the checkpoint's run had batch={} per worker ({} workers); use --batch {}, "
        "or --global-batch {} to keep its global batch",
        c.manifest_at, config.batch, m.batch, m.workers, m.batch, global);
  if (m.next_epoch >= config.epochs)
    return fmt::format("{}: already trained {} epoch(s); ask for more with --epochs (now {})", c.manifest_at,
                       m.next_epoch, config.epochs);
  return {};
}

}  // namespace gradsync
