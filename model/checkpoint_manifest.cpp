#include "model/checkpoint_manifest.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gradsync {
namespace {

constexpr const char* kMagicLine = "gradsync-manifest 1";
constexpr std::size_t kMaxManifestBytes = 1 << 20;

std::uint32_t crc_of(const std::string& text, std::size_t n) {
  return static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(text.data()), n));
}

CheckpointError bad(const std::string& name, const std::string& what) {
  return CheckpointError(fmt::format("{}: {}", name, what));
}

// Where the final 'end' line starts, once its CRC matches everything before it. Throws CheckpointError (`name` in
// the message) if the manifest is torn or damaged.
std::size_t checked_end(const std::string& text, const std::string& name) {
  const std::size_t end_at = text.rfind("end ");
  if (text.rfind(kMagicLine, 0) != 0) throw bad(name, "not a gradsync manifest (first line)");
  if (end_at == std::string::npos || (end_at > 0 && text[end_at - 1] != '\n'))
    throw bad(name, "torn manifest: no final 'end' line (the write did not finish)");
  unsigned stored = 0;
  char tail = 0;
  if (std::sscanf(text.c_str() + end_at, "end %8x%c", &stored, &tail) != 2 || tail != '\n' || end_at + 13 != text.size())
    throw bad(name, "torn manifest: its 'end' line is incomplete");
  if (const std::uint32_t computed = crc_of(text, end_at); computed != stored)
    throw bad(name,
              fmt::format("corrupted manifest: checksum mismatch (stored {:08x}, computed {:08x})", stored, computed));
  return end_at;
}

// The 'history' line, or nothing when the history is not known. fmt writes a double in the shortest form that reads
// back to the same bits, so a resumed run continues from exactly the numbers the writing run had.
std::string history_line(const ReportHistory& h) {
  if (!h.known) return {};
  return fmt::format("history {} {} {} {} {} {} {} {}\n", h.evaluations, h.best_accuracy, h.evaluated_steps,
                     h.evaluated_s, h.elapsed_s, h.target_accuracy, h.target_steps, h.target_s);
}

// The fields of a 'history' line, after its keyword.
ReportHistory parse_history(std::istringstream s, const std::string& name) {
  ReportHistory h;
  h.known = true;
  std::string rest;
  if (!(s >> h.evaluations >> h.best_accuracy >> h.evaluated_steps >> h.evaluated_s >> h.elapsed_s >> h.target_accuracy >>
        h.target_steps >> h.target_s) ||
      (s >> rest))
    throw bad(name, "malformed manifest: 'history' line");
  const bool accuracies =
      h.best_accuracy >= 0 && h.best_accuracy <= 1 && h.target_accuracy >= 0 && h.target_accuracy <= 1;
  const bool times = h.evaluated_s >= 0 && h.elapsed_s >= h.evaluated_s && std::isfinite(h.elapsed_s) &&
                     h.target_s >= -1 && h.target_steps >= -1 && std::isfinite(h.target_s + h.target_steps);
  if (h.evaluations < 0 || h.evaluated_steps < 0 || !accuracies || !times)
    throw bad(name, "malformed manifest: 'history' line out of range");
  return h;
}

// The lines of a manifest's text, one field at a time.
class Lines {
 public:
  Lines(const std::string& text, const std::string& name) : in_(text), name_(name) {}
  // The next line, which must be `field`'s: the rest of it after the keyword.
  std::istringstream expect(const std::string& field) {
    std::istringstream s;
    if (!optional(field, s)) throw bad(name_, fmt::format("malformed manifest: expected the '{}' line", field));
    return s;
  }
  // The next line if it is `field`'s, into `rest` (then true); otherwise it stays the next line.
  bool optional(const std::string& field, std::istringstream& rest) {
    if (!held_ && !std::getline(in_, line_)) return false;
    held_ = true;
    if (line_.rfind(field + " ", 0) != 0) return false;
    held_ = false;
    rest = std::istringstream(line_.substr(field.size() + 1));
    return true;
  }
  bool done() { return !held_ && !std::getline(in_, line_); }

 private:
  std::istringstream in_;
  const std::string& name_;
  std::string line_;
  bool held_ = false;  // line_ is read but not yet taken
};

}  // namespace

bool Manifest::same_set(const Manifest& o) const {
  if (run != o.run || step != o.step || next_epoch != o.next_epoch || epoch_examples != o.epoch_examples ||
      history != o.history || param_count != o.param_count || optimizer_count != o.optimizer_count ||
      params_crc != o.params_crc || optimizer_crc != o.optimizer_crc || pieces.size() != o.pieces.size())
    return false;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    ManifestPiece a = pieces[k], b = o.pieces[k];
    a.here = b.here = false;
    if (!(a == b)) return false;
  }
  return true;
}

std::string serialize_manifest(const Manifest& m) {
  std::string text = fmt::format(
      "{}\nrun {}\nstep {}\nnext_epoch {}\nepoch_examples {}\n{}shape {} {} {} {}\n"
      "params {} {:08x}\noptimizer {} {:08x}\npieces {}\n",
      kMagicLine, m.run, m.step, m.next_epoch, m.epoch_examples, history_line(m.history), m.ranks, m.workers, m.servers,
      m.batch, m.param_count, m.params_crc, m.optimizer_count, m.optimizer_crc, m.pieces.size());
  for (std::size_t k = 0; k < m.pieces.size(); ++k) {
    const ManifestPiece& p = m.pieces[k];
    text += fmt::format("piece {} {} {} {} {} {:08x} {}\n", k, p.begin, p.end, p.file, p.bytes, p.crc, p.here ? 1 : 0);
  }
  text += fmt::format("end {:08x}\n", crc_of(text, text.size()));
  return text;
}

namespace {

// The K 'piece' lines, which must cover [0, m.param_count) in order, into m.pieces.
void parse_pieces(Lines& lines, std::size_t k_count, Manifest& m, const std::string& name) {
  std::uint64_t covered = 0;
  for (std::size_t k = 0; k < k_count; ++k) {
    std::istringstream s = lines.expect("piece");
    std::size_t index = 0;
    int here = 0;
    ManifestPiece p;
    if (!(s >> index >> p.begin >> p.end >> p.file >> p.bytes >> std::hex >> p.crc >> std::dec >> here) || index != k ||
        p.begin != covered || p.end < p.begin || p.file.find('/') != std::string::npos || (here != 0 && here != 1))
      throw bad(name, fmt::format("malformed manifest: piece line {}", k));
    p.here = here == 1;
    covered = p.end;
    m.pieces.push_back(p);
  }
  if (covered != m.param_count)
    throw bad(name, fmt::format("malformed manifest: pieces cover {} of {} parameters", covered, m.param_count));
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& name) {
  // The CRC first: nothing in a damaged manifest is trusted.
  const std::size_t end_at = checked_end(text, name);
  Lines lines(text.substr(0, end_at), name);
  lines.expect("gradsync-manifest");  // the magic line, checked
  Manifest m;
  m.run = lines.expect("run").str();
  const auto number = [&](std::istringstream s, auto& out, const char* field) {
    if (!(s >> out)) throw bad(name, fmt::format("malformed manifest: '{}' needs a number", field));
  };
  number(lines.expect("step"), m.step, "step");
  number(lines.expect("next_epoch"), m.next_epoch, "next_epoch");
  number(lines.expect("epoch_examples"), m.epoch_examples, "epoch_examples");
  if (std::istringstream s; lines.optional("history", s)) m.history = parse_history(std::move(s), name);
  {
    std::istringstream s = lines.expect("shape");
    if (!(s >> m.ranks >> m.workers >> m.servers >> m.batch)) throw bad(name, "malformed manifest: 'shape' line");
  }
  const auto counted = [&](const char* field, std::uint64_t& count, std::uint32_t& crc) {
    std::istringstream s = lines.expect(field);
    if (!(s >> count >> std::hex >> crc)) throw bad(name, fmt::format("malformed manifest: '{}' line", field));
  };
  counted("params", m.param_count, m.params_crc);
  counted("optimizer", m.optimizer_count, m.optimizer_crc);
  std::size_t k_count = 0;
  number(lines.expect("pieces"), k_count, "pieces");
  if (k_count == 0 || k_count > 4096) throw bad(name, fmt::format("malformed manifest: {} pieces", k_count));
  // Sharded state cuts the optimizer's like the parameters, in blocks of one value per parameter; a replicated piece
  // may carry more (checkpoint_set.hpp).
  if (m.servers > 0 && (m.param_count == 0 ? m.optimizer_count != 0 : m.optimizer_count % m.param_count != 0))
    throw bad(name, "malformed manifest: sharded optimizer state not a whole number of values per parameter");
  parse_pieces(lines, k_count, m, name);
  if (!lines.done()) throw bad(name, "malformed manifest: lines after the pieces");
  return m;
}

Manifest read_manifest(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw bad(path, "cannot open manifest");
  std::string text;
  text.resize(kMaxManifestBytes + 1);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(f.gcount()));
  if (text.size() > kMaxManifestBytes) throw bad(path, "not a manifest (larger than 1 MiB)");
  return parse_manifest(text, path);
}

}  // namespace gradsync
