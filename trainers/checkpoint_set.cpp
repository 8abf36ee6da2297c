#include "trainers/checkpoint_set.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "collectives/allreduce.hpp"
#include "collectives/watchdog.hpp"

namespace gradsync {
namespace fs = std::filesystem;
namespace {

constexpr int kTagPieceParams = 0x80;
constexpr int kTagPieceOptimizer = 0x81;
constexpr int kTagResumeStatus = 0x82;
constexpr int kTagResumeParams = 0x83;
constexpr int kTagResumeOptimizer = 0x84;

// Broadcasts rank 0's text. With `is_error`, throws it as CheckpointError on every rank.
std::string broadcast_text(std::string text, bool is_error, const Comm& world) {
  std::int64_t head[2] = {static_cast<std::int64_t>(text.size()), is_error ? 1 : 0};
  check_mpi(MPI_Bcast(head, 2, MPI_INT64_T, 0, world.native()), "MPI_Bcast (checkpoint)", world.rank());
  text.resize(static_cast<std::size_t>(head[0]));
  if (head[0] > 0)
    check_mpi(MPI_Bcast(text.data(), world.to_int_count(text.size(), "MPI_Bcast"), MPI_CHAR, 0, world.native()),
              "MPI_Bcast (checkpoint)", world.rank());
  if (head[1] != 0) throw CheckpointError(text);
  return text;
}

// Every rank's error (empty: none) reaches every rank: the first one is thrown everywhere.
void agree_on_errors(const std::string& mine, const Comm& world) {
  const bool ok = world.all_ok(mine.empty());
  if (ok) return;
  // Rank of the lowest failing rank, then its message.
  int failing = mine.empty() ? world.size() : world.rank();
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, world.native()), "MPI_Allreduce (checkpoint)",
            world.rank());
  std::int64_t length = static_cast<std::int64_t>(mine.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT64_T, failing, world.native()), "MPI_Bcast (checkpoint)", world.rank());
  std::string text = mine;
  text.resize(static_cast<std::size_t>(length));
  check_mpi(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, failing, world.native()), "MPI_Bcast (checkpoint)",
            world.rank());
  throw CheckpointError(text);
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError(fmt::format("{}: cannot open to fsync: {}", dir.string(), std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) throw CheckpointError(fmt::format("{}: fsync failed: {}", dir.string(), std::strerror(e)));
}

std::vector<std::uint8_t> slurp(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CheckpointError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::uint32_t stored_file_crc(std::span<const std::uint8_t> bytes) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes[bytes.size() - 4 + static_cast<std::size_t>(i)]} << (8 * i);
  return v;
}

// A piece file checked against the manifest that names it. Throws CheckpointError saying what differs.
Checkpoint read_piece(const fs::path& path, const Manifest& m, std::size_t k) {
  const std::vector<std::uint8_t> bytes = slurp(path);
  Checkpoint c = parse_checkpoint(bytes, path.string());  // its own header and file CRCs
  const ManifestPiece& p = m.pieces[k];
  const auto refuse = [&](const std::string& what) {
    return CheckpointError(fmt::format("{}: {}", path.string(), what));
  };
  if (stored_file_crc(bytes) != p.crc || bytes.size() != p.bytes)
    throw refuse(fmt::format("not the piece its manifest names (crc {:08x}, {} bytes; manifest: {:08x}, {} bytes)",
                             stored_file_crc(bytes), bytes.size(), p.crc, p.bytes));
  if (c.config != m.run) throw refuse("written by a different run than its manifest");
  if (c.step != m.step) throw refuse(fmt::format("piece of step {}, manifest of step {}", c.step, m.step));
  if (c.params.size() != p.end - p.begin || c.optimizer_state.size() != (m.optimizer_count ? p.end - p.begin : 0))
    throw refuse("piece sizes differ from its manifest's key range");
  return c;
}

}  // namespace

CheckpointWriter::CheckpointWriter(const TrainConfig& config, const Comm& world, const HostMap& hosts,
                                   std::string fingerprint, StateLayout layout, std::int64_t resumed_step)
    : config_(config), world_(world), hosts_(hosts), fingerprint_(std::move(fingerprint)), layout_(layout),
      dir_(local_checkpoint_dir(config)) {
  std::string error;
  if (hosts_.is_leader(world_.rank())) {
    try {
      std::error_code ec;
      fs::create_directories(dir_, ec);
      if (ec)
        throw CheckpointError(fmt::format("--checkpoint {}: cannot create the directory on host {}: {}", dir_,
                                          this_host_name(), ec.message()));
      const fs::path probe = fs::path(dir_) / ".gradsync-write-test";
      const std::uint8_t byte = 0;
      write_file_atomically(probe.string(), {&byte, 1});
      fs::remove(probe, ec);
      for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
        const std::int64_t step = step_of_set_dir(e.path().filename().string());
        if (step >= 0 && step > resumed_step) fs::remove_all(e.path(), ec);
      }
    } catch (const std::exception& e) {
      error = fmt::format("on host {}: {}", this_host_name(), e.what());
    }
  }
  agree_on_errors(error, world_);
  if (world_.rank() == 0 && !config_.quiet && hosts_.hosts() < config_.checkpoint_replicas)
    fmt::print(stderr,
               "train: note: {} host(s) in this run, fewer than --checkpoint-replicas {}: each checkpoint is "
               "written on {} host(s)\n",
               hosts_.hosts(), config_.checkpoint_replicas, hosts_.hosts());
}

Manifest CheckpointWriter::write(const CheckpointProgress& progress, std::span<const float> params,
                                 std::span<const float> optimizer) {
  const int me = world_.rank();
  const std::size_t pieces = layout_.pieces();
  const bool with_optimizer = layout_.optimizer_count > 0;
  struct Held {
    std::size_t k;
    ElementRange range;
    std::vector<float> params, optimizer;
  };
  std::vector<Held> held;
  std::vector<MPI_Request> requests;
  // Sharded state reaches the buddies over MPI; replicated state is already on every worker.
  for (std::size_t k = 0; k < pieces; ++k) {
    const int owner = layout_.sharded ? static_cast<int>(k) : 0;
    const ElementRange range = partition(layout_.parameter_count, pieces, k);
    const std::vector<int> holders = hosts_.holders(owner, config_.checkpoint_replicas);
    const int n = world_.to_int_count(range.size(), "MPI_Isend");
    const bool holds = std::find(holders.begin(), holders.end(), me) != holders.end();
    if (holds) {
      Held h{k, range, {}, {}};
      h.params.resize(range.size());
      h.optimizer.resize(with_optimizer ? range.size() : 0);
      if (me == owner || !layout_.sharded) {
        std::copy_n(params.begin() + static_cast<std::ptrdiff_t>(range.begin), range.size(), h.params.begin());
        if (with_optimizer)
          std::copy_n(optimizer.begin() + static_cast<std::ptrdiff_t>(range.begin), range.size(), h.optimizer.begin());
      }
      held.push_back(std::move(h));
    }
    if (!layout_.sharded) continue;
    for (int holder : holders) {
      if (holder == owner) continue;
      if (me == owner) {
        for (int tag : {kTagPieceParams, kTagPieceOptimizer}) {
          if (tag == kTagPieceOptimizer && !with_optimizer) continue;
          const float* data = (tag == kTagPieceParams ? params : optimizer).data() + range.begin;
          requests.emplace_back();
          check_mpi(MPI_Isend(data, n, MPI_FLOAT, holder, tag, world_.native(), &requests.back()),
                    "MPI_Isend (checkpoint piece to its buddy)", me);
        }
      } else if (me == holder) {
        Held& h = held.back();
        requests.emplace_back();
        check_mpi(MPI_Irecv(h.params.data(), n, MPI_FLOAT, owner, kTagPieceParams, world_.native(), &requests.back()),
                  "MPI_Irecv (checkpoint piece from its owner)", me);
        if (with_optimizer) {
          requests.emplace_back();
          check_mpi(
              MPI_Irecv(h.optimizer.data(), n, MPI_FLOAT, owner, kTagPieceOptimizer, world_.native(), &requests.back()),
              "MPI_Irecv (checkpoint piece from its owner)", me);
        }
      }
    }
  }
  if (!requests.empty()) {
    const WaitScope wait("MPI_Waitall (checkpoint pieces to their buddies)", progress.step);
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall (checkpoint pieces)", me);
  }

  // Every holder serializes its pieces; what each piece is (its CRCs and size) is agreed by all ranks at once:
  // for each value the max over holders of v and of -v, so a disagreement between holders shows as max != -max(-v).
  // Signed 64-bit values (all of them are far below 2^63), with INT64_MIN from the ranks that hold no copy: Debian's
  // MPICH 4.0 compares MPI_UINT64_T as signed under MPI_MAX, which broke the earlier unsigned max(v), max(~v) form.
  constexpr std::size_t kFields = 5;  // params crc, optimizer crc, file crc, file bytes, not finite
  std::vector<std::int64_t> agreed(2 * kFields * pieces, std::numeric_limits<std::int64_t>::min());
  std::vector<std::vector<std::uint8_t>> files(held.size());
  for (std::size_t i = 0; i < held.size(); ++i) {
    const Held& h = held[i];
    Checkpoint c;
    c.config = fingerprint_;
    c.params = h.params;
    c.optimizer_state = h.optimizer;
    c.step = progress.step;
    c.epoch = progress.next_epoch;
    c.rng = {config_.seed, h.range.begin, h.range.end, layout_.parameter_count};
    files[i] = serialize_checkpoint(c, piece_file_name(h.k, pieces));
    const std::int64_t values[kFields] = {crc32_floats(h.params), crc32_floats(h.optimizer), stored_file_crc(files[i]),
                                          static_cast<std::int64_t>(files[i].size()),
                                          all_finite(h.params) && all_finite(h.optimizer) ? 0 : 1};
    for (std::size_t f = 0; f < kFields; ++f) {
      agreed[h.k * 2 * kFields + f] = values[f];
      agreed[h.k * 2 * kFields + kFields + f] = -values[f];
    }
  }
  {
    const WaitScope wait("MPI_Allreduce (checkpoint piece checksums)", progress.step);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, agreed.data(), static_cast<int>(agreed.size()), MPI_INT64_T, MPI_MAX,
                            world_.native()),
              "MPI_Allreduce (checkpoint piece checksums)", me);
  }
  Manifest m;
  m.run = fingerprint_;
  m.step = progress.step;
  m.next_epoch = progress.next_epoch;
  m.epoch_examples = progress.epoch_examples;
  m.ranks = layout_.ranks;
  m.workers = layout_.workers;
  m.servers = layout_.sharded ? layout_.servers : 0;
  m.batch = layout_.batch;
  m.param_count = layout_.parameter_count;
  m.optimizer_count = layout_.optimizer_count;
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::int64_t* max = &agreed[k * 2 * kFields];
    const std::int64_t* neg = max + kFields;
    for (std::size_t f = 0; f < kFields; ++f)
      if (max[f] != -neg[f])
        throw CheckpointError(
            fmt::format("checkpoint at step {} not written: the holders of piece {} of {} hold "
                        "different bits (replicas that should be identical are not); the previous "
                        "checkpoint is kept",
                        progress.step, k, pieces));
    if (max[4] != 0)
      throw CheckpointError(
          fmt::format("checkpoint at step {} not written: piece {} of {} holds NaN or Inf; the "
                      "previous checkpoint is kept",
                      progress.step, k, pieces));
    const ElementRange range = partition(layout_.parameter_count, pieces, k);
    const std::uint64_t floats = range.size() * sizeof(float);
    m.params_crc = k == 0 ? static_cast<std::uint32_t>(max[0])
                          : crc32_concat(m.params_crc, static_cast<std::uint32_t>(max[0]), floats);
    m.optimizer_crc =
        k == 0 ? static_cast<std::uint32_t>(max[1])
               : crc32_concat(m.optimizer_crc, static_cast<std::uint32_t>(max[1]), with_optimizer ? floats : 0);
    m.pieces.push_back({range.begin, range.end, piece_file_name(k, pieces), static_cast<std::uint64_t>(max[3]),
                        static_cast<std::uint32_t>(max[2]), false});
  }

  std::string error;
  if (!held.empty()) {
    try {
      const fs::path set = fs::path(dir_) / set_dir_name(progress.step);
      const bool created = fs::create_directories(set);
      if (created) fsync_dir(dir_);  // the set's directory entry itself must survive a crash
      Manifest mine = m;
      for (std::size_t i = 0; i < held.size(); ++i) {
        write_file_atomically((set / m.pieces[held[i].k].file).string(), files[i]);
        mine.pieces[held[i].k].here = true;
      }
      const std::string text = serialize_manifest(mine);
      write_file_atomically((set / manifest_file_name(me)).string(),
                            {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
    } catch (const std::exception& e) {
      error =
          fmt::format("checkpoint at step {} on host {} (rank {}): {}", progress.step, this_host_name(), me, e.what());
    }
  }
  {
    const WaitScope wait("MPI_Allreduce (checkpoint written on every holder)", progress.step);
    agree_on_errors(error, world_);  // also the barrier: every holder has committed before anyone prunes
  }
  if (hosts_.is_leader(me)) prune();
  return m;
}

void CheckpointWriter::prune() {
  std::vector<std::pair<std::int64_t, fs::path>> sets;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    const std::int64_t step = step_of_set_dir(e.path().filename().string());
    if (step >= 0) sets.emplace_back(step, e.path());
  }
  std::sort(sets.rbegin(), sets.rend());
  int committed = 0;
  for (const auto& [step, path] : sets) {
    bool has_manifest = false;
    for (const fs::directory_entry& f : fs::directory_iterator(path, ec))
      has_manifest |= f.path().filename().string().rfind("manifest-r", 0) == 0;
    if (committed >= kKeptSets)
      fs::remove_all(path, ec);
    else if (has_manifest)
      ++committed;
  }
}

namespace {

// One host's view of its directory, as lines rank 0 can merge:
//   M <step> <rank> <manifest path> \x1f <manifest text, '\n' as \x1e>
//   V <step> <piece> <crc> <host>:<path>      a valid copy of that piece
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

std::string gather_text(const std::string& mine, const Comm& world) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(world.size()));
  check_mpi(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world.native()), "MPI_Gather (inventory)",
            world.rank());
  std::vector<int> offsets(lengths.size(), 0);
  for (std::size_t i = 1; i < lengths.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
  std::string all(world.rank() == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0, '\0');
  check_mpi(
      MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, world.native()),
      "MPI_Gatherv (inventory)", world.rank());
  return all;
}

struct Copy {
  int rank;
  std::string path;
};

struct Choice {
  std::int64_t step = -1;
  Manifest manifest;
  std::string manifest_at;
  std::vector<Copy> sources;  // per piece
  std::string notes;          // what was found unusable in sets at least as new as the one chosen
};

// Rank 0: the newest set complete among the inventories, or the reason there is none.
Choice choose(const std::string& all, const TrainConfig& config, const HostMap& hosts, const std::string& fingerprint,
              std::string& error) {
  std::map<std::int64_t, std::vector<std::pair<std::string, Manifest>>, std::greater<>> manifests;
  std::map<std::int64_t, std::vector<std::string>> problems;
  std::vector<std::string> general;
  std::map<std::pair<std::int64_t, std::size_t>, std::vector<std::pair<std::uint32_t, Copy>>> valid;
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
      (step < 0 ? general : problems[step]).push_back(rest);
    } else if (kind == 'M') {
      int rank = 0;
      std::string where;
      s >> rank >> where;
      std::string text = line.substr(line.find('\x1f') + 1);
      std::replace(text.begin(), text.end(), '\x1e', '\n');
      manifests[step].emplace_back(where, parse_manifest(text, where));
    } else if (kind == 'V') {
      std::size_t k = 0;
      unsigned crc = 0;
      Copy c{};
      s >> k >> std::hex >> crc >> std::dec >> c.rank >> c.path;
      valid[{step, k}].emplace_back(crc, c);
    }
  }
  std::string foreign;
  for (const auto& [step, list] : manifests) {
    const auto ours = std::find_if(list.begin(), list.end(), [&](const auto& m) { return m.second.run == fingerprint; });
    if (ours == list.end()) {
      if (foreign.empty())
        foreign = fmt::format("{}: checkpoint was written by a different run: expected \"{}\", found \"{}\"",
                              list.front().first, fingerprint, list.front().second.run);
      continue;
    }
    const Manifest& ref = ours->second;
    Choice c{step, ref, ours->first, {}, {}};
    for (std::size_t k = 0; k < ref.pieces.size(); ++k) {
      const auto& copies = valid[{step, k}];
      const auto good =
          std::find_if(copies.begin(), copies.end(), [&](const auto& v) { return v.first == ref.pieces[k].crc; });
      if (good == copies.end()) {
        problems[step].push_back(fmt::format("piece {} of {} ({}): no valid copy on the hosts left", k, ref.pieces.size(),
                                             ref.pieces[k].file));
        break;
      }
      c.sources.push_back(good->second);
    }
    if (c.sources.size() == ref.pieces.size()) {
      for (const auto& [p_step, found] : problems)
        if (p_step >= step)
          for (const std::string& p : found) c.notes += fmt::format("\n  step {}: {}", p_step, p);
      return c;
    }
  }
  std::string hosts_list;
  for (int h = 0; h < hosts.hosts(); ++h) hosts_list += (h ? ", " : "") + hosts.name(h);
  if (!foreign.empty() && problems.empty()) {
    error = foreign;
    return {};
  }
  error = fmt::format("--resume: no complete checkpoint in --checkpoint {} on the {} host(s) of this run ({})",
                      config.checkpoint_dir, hosts.hosts(), hosts_list);
  for (const std::string& g : general) error += "\n  " + g;
  for (auto it = problems.rbegin(); it != problems.rend(); ++it)
    for (const std::string& p : it->second) error += fmt::format("\n  step {}: {}", it->first, p);
  if (!foreign.empty()) error += "\n  " + foreign;
  return {};
}

// Rank 0: whether this run may continue the chosen set; empty if it may.
std::string compatible(const Choice& c, const TrainConfig& config, std::size_t parameter_count) {
  const Manifest& m = c.manifest;
  if (m.param_count != parameter_count)
    return fmt::format("{}: checkpoint holds {} parameters, this run's model has {}", c.manifest_at, m.param_count,
                       parameter_count);
  const std::size_t state = config.sgd.momentum != 0.0f ? parameter_count : 0;
  if (m.optimizer_count != state)
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

}  // namespace

ResumePoint load_newest_checkpoint(const TrainConfig& config, const Comm& world, const HostMap& hosts,
                                   const std::string& fingerprint, std::size_t parameter_count) {
  const int me = world.rank();
  const std::string mine = hosts.is_leader(me) ? inventory(local_checkpoint_dir(config), me) : std::string();
  const std::string all = gather_text(mine, world);
  Choice choice;
  std::string error, decision;
  if (me == 0) {
    try {
      choice = choose(all, config, hosts, fingerprint, error);
      if (error.empty()) error = compatible(choice, config, parameter_count);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) {
      decision = serialize_manifest(choice.manifest) + "\x1f" + choice.manifest_at;
      for (const Copy& c : choice.sources) decision += fmt::format("\x1f{} {}", c.rank, c.path);
    }
  }
  decision = broadcast_text(error.empty() ? decision : error, !error.empty(), world);

  // Every rank decodes the decision: the manifest, where it was read, and one source per piece.
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const std::size_t next = decision.find('\x1f', at);
    parts.push_back(decision.substr(at, next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  const Manifest m = parse_manifest(parts[0], parts[1]);
  ResumePoint point;
  point.manifest = m;
  point.params.resize(parameter_count);
  point.optimizer_state.resize(m.optimizer_count);
  point.next_epoch = static_cast<int>(m.next_epoch);
  point.steps_done = m.step;
  point.epoch_examples = m.epoch_examples;
  point.skipped = choice.notes;

  // Each piece's source reads it again (checked against the manifest) and sends it to rank 0.
  std::string my_error;
  for (std::size_t k = 0; k < m.pieces.size(); ++k) {
    std::istringstream s(parts[2 + k]);
    int source = 0;
    std::string path;
    s >> source >> path;
    point.sources += fmt::format("{}piece {}: {}:{}", k ? "; " : "", k, hosts.name(hosts.host_of(source)), path);
    const ManifestPiece& p = m.pieces[k];
    const int n = world.to_int_count(p.end - p.begin, "MPI_Send");
    if (me == source) {
      Checkpoint c;
      int status = 1;
      try {
        c = read_piece(path, m, k);
      } catch (const std::exception& e) {
        status = 0;
        my_error = e.what();
      }
      if (me == 0) {
        if (status) {
          std::copy(c.params.begin(), c.params.end(), point.params.begin() + static_cast<std::ptrdiff_t>(p.begin));
          std::copy(c.optimizer_state.begin(), c.optimizer_state.end(),
                    point.optimizer_state.begin() + static_cast<std::ptrdiff_t>(p.begin));
        }
      } else {
        const WaitScope wait("MPI_Send (checkpoint piece to rank 0)", m.step, 0);
        world.send(&status, 1, MPI_INT, 0, kTagResumeStatus);
        if (status) {
          world.send(c.params.data(), static_cast<std::size_t>(n), MPI_FLOAT, 0, kTagResumeParams);
          if (m.optimizer_count)
            world.send(c.optimizer_state.data(), static_cast<std::size_t>(n), MPI_FLOAT, 0, kTagResumeOptimizer);
        }
      }
    } else if (me == 0) {
      const WaitScope wait("MPI_Recv (checkpoint piece from its holder)", m.step, source);
      int status = 0;
      world.recv(&status, 1, MPI_INT, source, kTagResumeStatus);
      if (!status) {
        my_error = fmt::format("piece {} could not be read again on rank {}", k, source);
        continue;
      }
      world.recv(point.params.data() + p.begin, static_cast<std::size_t>(n), MPI_FLOAT, source, kTagResumeParams);
      if (m.optimizer_count)
        world.recv(point.optimizer_state.data() + p.begin, static_cast<std::size_t>(n), MPI_FLOAT, source,
                   kTagResumeOptimizer);
    }
  }
  if (me == 0 && my_error.empty()) {
    const std::uint32_t params_crc = crc32_floats(point.params), optimizer_crc = crc32_floats(point.optimizer_state);
    if (params_crc != m.params_crc || optimizer_crc != m.optimizer_crc)
      my_error = fmt::format(
          "{}: the pieces put together do not give the state the manifest names (params crc {:08x}, "
          "manifest {:08x}; optimizer {:08x}, manifest {:08x})",
          parts[1], params_crc, m.params_crc, optimizer_crc, m.optimizer_crc);
  }
  agree_on_errors(my_error, world);
  for (std::vector<float>* v : {&point.params, &point.optimizer_state})
    if (!v->empty())
      check_mpi(MPI_Bcast(v->data(), world.to_int_count(v->size(), "MPI_Bcast"), MPI_FLOAT, 0, world.native()),
                "MPI_Bcast (resume)", me);
  return point;
}

}  // namespace gradsync
