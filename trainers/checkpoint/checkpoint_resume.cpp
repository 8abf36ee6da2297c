// load_newest_checkpoint (trainers/checkpoint/checkpoint_set.hpp): the hosts' inventories go to rank 0, which chooses a
// set (checkpoint_inventory.hpp); each piece's source sends it to rank 0, which checks the whole and broadcasts it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "collectives/watchdog.hpp"
#include "trainers/checkpoint/checkpoint_errors.hpp"
#include "trainers/checkpoint/checkpoint_files.hpp"
#include "trainers/checkpoint/checkpoint_inventory.hpp"
#include "trainers/checkpoint/checkpoint_set.hpp"

namespace gradsync {
namespace {

// A piece's three messages to rank 0: whether it could be read, its parameters, its optimizer state.
struct PieceTags {
  int status = 0, params = 0, optimizer = 0;
};

// Rank 0: the set to resume from, as text every rank decodes with decode_choice, or in `error` why there is none.
std::string describe_choice(const std::string& all, const TrainConfig& config, const HostMap& hosts,
                            const std::string& fingerprint, std::size_t parameter_count, SetChoice& choice,
                            std::string& error) {
  try {
    choice = choose_newest_set(all, config, hosts, fingerprint, error);
    if (error.empty()) error = incompatibility(choice, config, parameter_count);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) return {};
  std::string text = serialize_manifest(choice.manifest) + "\x1f" + choice.manifest_at;
  for (const PieceCopy& c : choice.sources) text += fmt::format("\x1f{} {}", c.rank, c.path);
  return text;
}

// The fields of describe_choice's text: the manifest, where it was read, then "<rank> <path>" per piece.
std::vector<std::string> decode_choice(const std::string& text) {
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const std::size_t next = text.find('\x1f', at);
    parts.push_back(text.substr(at, next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  return parts;
}

// Piece p's optimizer values into the whole state: all of it (replicated), or its key range of each block.
void place_optimizer(const Manifest& m, const ManifestPiece& p, std::span<const float> piece, ResumePoint& point) {
  if (m.servers == 0)
    std::ranges::copy(piece, point.optimizer_state.begin());
  else
    place_piece_state(piece, m.param_count, {p.begin, p.end}, point.optimizer_state);
}

ResumePoint empty_point(const Manifest& m, std::size_t parameter_count) {
  ResumePoint point;
  point.manifest = m;
  point.params.resize(parameter_count);
  point.optimizer_state.resize(m.optimizer_count);
  point.next_epoch = static_cast<int>(m.next_epoch);
  point.steps_done = m.step;
  point.epoch_examples = m.epoch_examples;
  point.history = m.history;
  return point;
}

// On piece k's source: reads it again (checked against the manifest) into rank 0's `point`, directly on rank 0,
// else by sending it there. Returns what went wrong reading it, or "".
std::string send_piece(const Comm& world, PieceTags tags, const std::string& path, const Manifest& m, std::size_t k,
                       ResumePoint& point) {
  const ManifestPiece& p = m.pieces[k];
  Checkpoint c;
  std::int32_t status = 1;
  std::string error;
  try {
    c = read_piece(path, m, k);
  } catch (const std::exception& e) {
    status = 0;
    error = e.what();
  }
  if (world.rank() == 0) {
    if (status) {
      std::copy(c.params.begin(), c.params.end(), point.params.begin() + static_cast<std::ptrdiff_t>(p.begin));
      place_optimizer(m, p, c.optimizer_state, point);
    }
    return error;
  }
  const WaitScope wait("MPI_Send (checkpoint piece to rank 0)", m.step, 0);
  world.send(std::span(&status, 1), 0, tags.status);
  if (status) {
    world.send(c.params, 0, tags.params);
    if (m.optimizer_count) world.send(c.optimizer_state, 0, tags.optimizer);
  }
  return error;
}

// On rank 0: piece k from its source, into `point`. Returns "" or that the source could not read it again.
std::string receive_piece(const Comm& world, PieceTags tags, int source, const Manifest& m, std::size_t k,
                          ResumePoint& point) {
  const ManifestPiece& p = m.pieces[k];
  const std::size_t n = p.end - p.begin;
  const WaitScope wait("MPI_Recv (checkpoint piece from its holder)", m.step, source);
  std::int32_t status = 0;
  world.recv(std::span(&status, 1), source, tags.status);
  if (!status) return fmt::format("piece {} could not be read again on rank {}", k, source);
  world.recv(std::span(point.params).subspan(p.begin, n), source, tags.params);
  if (m.optimizer_count) {
    std::vector<float> optimizer(piece_optimizer_count(m, p));
    world.recv(optimizer, source, tags.optimizer);
    place_optimizer(m, p, optimizer, point);
  }
  return {};
}

// Every piece to rank 0, from the source `parts` names for it; point.sources says which. Returns this rank's last
// error, or "". Collective over `world` (its tags are reserved here, on every rank alike).
std::string fetch_pieces(const Comm& world, const HostMap& hosts, const Manifest& m,
                         const std::vector<std::string>& parts, ResumePoint& point) {
  const int first = world.reserve_tags(3);
  const PieceTags tags{first, first + 1, first + 2};
  std::string my_error;
  for (std::size_t k = 0; k < m.pieces.size(); ++k) {
    std::istringstream s(parts[2 + k]);
    int source = 0;
    std::string path;
    s >> source >> path;
    point.sources += fmt::format("{}piece {}: {}:{}", k ? "; " : "", k, hosts.name(hosts.host_of(source)), path);
    std::string error;
    if (world.rank() == source)
      error = send_piece(world, tags, path, m, k, point);
    else if (world.rank() == 0)
      error = receive_piece(world, tags, source, m, k, point);
    if (!error.empty()) my_error = error;
  }
  return my_error;
}

// Rank 0: whether the pieces put together are the state the manifest read at `where` names.
std::string check_whole(const ResumePoint& point, const Manifest& m, const std::string& where) {
  const std::uint32_t params_crc = crc32_floats(point.params),
                      optimizer_crc = optimizer_state_crc(m, point.optimizer_state);
  if (params_crc == m.params_crc && optimizer_crc == m.optimizer_crc) return {};
  return fmt::format(
      "{}: the pieces put together do not give the state the manifest names (params crc {:08x}, "
      "manifest {:08x}; optimizer {:08x}, manifest {:08x})",
      where, params_crc, m.params_crc, optimizer_crc, m.optimizer_crc);
}

}  // namespace

ResumePoint load_newest_checkpoint(const TrainConfig& config, const Comm& world, const HostMap& hosts,
                                   const std::string& fingerprint, std::size_t parameter_count) {
  const int me = world.rank();
  const std::string mine = hosts.is_leader(me) ? inventory(local_checkpoint_dir(config), me) : std::string();
  const std::string all = world.gather_strings(mine, 0);
  SetChoice choice;
  std::string error, decision;
  if (me == 0) decision = describe_choice(all, config, hosts, fingerprint, parameter_count, choice, error);
  decision = broadcast_text(error.empty() ? decision : error, !error.empty(), world);

  const std::vector<std::string> parts = decode_choice(decision);
  const Manifest m = parse_manifest(parts[0], parts[1]);
  ResumePoint point = empty_point(m, parameter_count);
  point.skipped = choice.notes;
  std::string my_error = fetch_pieces(world, hosts, m, parts, point);
  if (me == 0 && my_error.empty()) my_error = check_whole(point, m, parts[1]);
  agree_on_errors(my_error, world);
  for (std::vector<float>* v : {&point.params, &point.optimizer_state})
    if (!v->empty()) world.broadcast(*v, 0);
  return point;
}

}  // namespace gradsync
