#include "model/kernels/plan_format.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>

#include "model/kernels/blis_arch.hpp"
#include "model/kernels/byte_gemm.hpp"

namespace gradsync {
namespace {

// A kernel name a plan may give `g`: a BLIS set, or the byte kernels for the shapes they handle.
bool valid_kernels(std::string_view name, const GemmShape& g) {
  return name == kByteKernels ? byte_gemm_handles(g) : blis_arch_index(name).has_value();
}

// "nn", "nt", "tn", "tt", or with a batch operand "nnb", "ntb": the batch is only ever op(B) of an untransposed A,
// "ntb" (forward) or "nnb" (weight gradient). False for anything else.
bool parse_ops(const std::string& ops, GemmShape& shape) {
  if (ops.size() < 2 || ops.size() > 3 || (ops[0] != 'n' && ops[0] != 't') || (ops[1] != 'n' && ops[1] != 't') ||
      (ops.size() == 3 && (ops[2] != 'b' || ops[0] != 'n')))
    return false;
  shape.transpose_a = ops[0] == 't';
  shape.transpose_b = ops[1] == 't';
  shape.batch_operand = ops.size() == 3;
  return true;
}

// One shape's line: "nn 128 32 784 skx skx=1.1e-05 zen3=2.0e-05". Nothing if it is malformed.
std::optional<PlannedGemm> parse_gemm_line(const std::string& line) {
  std::istringstream fields(line);
  std::string ops, timing;
  PlannedGemm g;
  if (!(fields >> ops >> g.shape.m >> g.shape.n >> g.shape.k >> g.kernels) || !parse_ops(ops, g.shape))
    return std::nullopt;
  if (g.shape.m == 0 || g.shape.n == 0 || g.shape.k == 0 || !valid_kernels(g.kernels, g.shape)) return std::nullopt;
  while (fields >> timing) {
    const auto eq = timing.find('=');
    if (eq == std::string::npos || !valid_kernels(timing.substr(0, eq), g.shape)) return std::nullopt;
    char* end = nullptr;
    const double s = std::strtod(timing.c_str() + eq + 1, &end);
    if (end == timing.c_str() + eq + 1 || *end != '\0' || !(s > 0)) return std::nullopt;
    g.seconds.emplace_back(timing.substr(0, eq), s);
  }
  return g;
}

}  // namespace

std::string gemm_shape_text(const GemmShape& g) {
  return fmt::format("{}{}{} {} {} {}", g.transpose_a ? 't' : 'n', g.transpose_b ? 't' : 'n', g.batch_operand ? "b" : "",
                     g.m, g.n, g.k);
}

double PlannedGemm::seconds_of(std::string_view set) const {
  for (const auto& [name, s] : seconds)
    if (name == set) return s;
  return 0;
}

const PlannedGemm* KernelPlan::find(const GemmShape& shape) const {
  for (const PlannedGemm& g : gemms)
    if (g.shape == shape) return &g;
  return nullptr;
}

std::string KernelPlan::to_text() const {
  std::string out = fallback.empty() ? "" : fmt::format("default {}\n", fallback);
  for (const PlannedGemm& g : gemms) {
    out += gemm_shape_text(g.shape) + " " + g.kernels;
    for (const auto& [name, s] : g.seconds) out += fmt::format(" {}={:.6e}", name, s);
    out += '\n';
  }
  return out;
}

std::optional<KernelPlan> KernelPlan::from_text(std::string_view text) {
  KernelPlan plan;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("default ", 0) == 0) {  // "default zen3": once, a BLIS set, nothing after it
      std::istringstream fields(line);
      std::string word, set, extra;
      fields >> word >> set;
      if (!plan.fallback.empty() || !blis_arch_index(set) || fields >> extra) return std::nullopt;
      plan.fallback = set;
      continue;
    }
    auto g = parse_gemm_line(line);
    // A shape twice: which line would win is not defined.
    if (!g || plan.find(g->shape)) return std::nullopt;
    plan.gemms.push_back(std::move(*g));
  }
  return plan;
}

std::string KernelPlan::summary(std::string_view default_set) const {
  if (!fallback.empty()) default_set = fallback;
  if (gemms.empty()) return fmt::format("GEMM kernels: {} for every shape ({})", default_set, source);
  std::string out = fmt::format("GEMM kernels per shape (m x n x k; {}):", source);
  for (const PlannedGemm& g : gemms) {
    const std::string text = gemm_shape_text(g.shape);
    out += fmt::format(
        " {}{}x{}x{} {}",
        g.shape.transpose_a || g.shape.transpose_b || g.shape.batch_operand ? text.substr(0, text.find(' ')) + ":" : "",
        g.shape.m, g.shape.n, g.shape.k, g.kernels);
    const double chosen = g.seconds_of(g.kernels), others = g.seconds_of(default_set);
    if (chosen > 0 && others > 0 && g.kernels != default_set) out += fmt::format(" ({:.2f}x)", others / chosen);
    out += ',';
  }
  out.pop_back();
  return out;
}

}  // namespace gradsync
