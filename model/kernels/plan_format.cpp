#include "model/kernels/plan_format.hpp"

#include <blis.h>
#include <fmt/format.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/dataset.hpp"
#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/gemm.hpp"

namespace gradsync {
namespace {

// v3: the default set wins within 10%; v4: the byte kernels are a candidate for the input layer's products;
// v5: the products of one batch are chosen together. The version is part of the cache key too, so that builds of
// two versions on one machine keep a file each instead of measuring again whenever the other wrote last.
constexpr std::string_view kCacheVersion = "v5";
constexpr std::string_view kCacheHeader = "# gradsync BLIS kernel plan";
// The last line: a file cut short (a full disk, a copy interrupted) can end in a line that still parses ("zen3"
// cut to "zen"), so a file without it is not read.
constexpr std::string_view kCacheFooter = "# end\n";

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// "nt 10 32 784"; a shape whose B operand is the input batch is marked "ntb".
std::string shape_text(const GemmShape& g) {
  return fmt::format("{}{}{} {} {} {}", g.transpose_a ? 't' : 'n', g.transpose_b ? 't' : 'n', g.batch_operand ? "b" : "",
                     g.m, g.n, g.k);
}

std::optional<int> arch_index(std::string_view name) {
  for (int i = 0; i < BLIS_NUM_ARCHS; ++i)
    if (name == bli_arch_string(static_cast<arch_t>(i))) return i;
  return std::nullopt;
}

// A kernel name a plan may give `g`: a BLIS set, or the byte kernels for the shapes they handle.
bool valid_kernels(std::string_view name, const GemmShape& g) {
  return name == kByteKernels ? byte_gemm_handles(g) : arch_index(name).has_value();
}

struct InstalledGemm {
  GemmShape shape;
  cntx_t* cntx = nullptr;  // the BLIS set's context; null for the byte kernels
  bool bytes = false;
};
struct Installed {
  KernelPlan plan;
  std::vector<InstalledGemm> gemms;
  cntx_t* fallback = nullptr;  // the context for shapes the plan does not list; null: BLIS's default kernels
};
Installed& installed() {
  static Installed state;
  return state;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

std::string cpu_signature() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    const unsigned family = ((eax >> 8) & 0xf) + (((eax >> 8) & 0xf) == 0xf ? (eax >> 20) & 0xff : 0);
    const unsigned model = ((eax >> 4) & 0xf) | (((eax >> 16) & 0xf) << 4);
    return fmt::format("family 0x{:x} model 0x{:x} stepping {}", family, model, eax & 0xf);
  }
#endif
  return "no cpuid";
}

// Per-call seconds of one candidate on one shape: `calls` back-to-back calls, as a training step makes them.
double time_calls(const std::function<void()>& call, int calls) {
  const double start = now_s();
  for (int i = 0; i < calls; ++i) call();
  return (now_s() - start) / calls;
}

// Which candidate a shape gets from its timings: the fastest, except that `preferred` keeps it unless another
// beats it by more than kPlanMargin. Candidates named `skip` are left out. Null if none is left.
const std::pair<std::string, double>* pick(const PlannedGemm& g, std::string_view preferred, std::string_view skip = {}) {
  const std::pair<std::string, double>* winner = nullptr;
  for (const auto& candidate : g.seconds)
    if (candidate.first != skip && (!winner || candidate.second < winner->second)) winner = &candidate;
  for (const auto& candidate : g.seconds)
    if (winner && candidate.first == preferred && candidate.second <= winner->second * (1 + kPlanMargin))
      winner = &candidate;
  return winner;
}

// Seconds to widen `examples` rows of `features` bytes into floats (widen_row, as the gather does), rows in cache:
// the least over `rounds` samples of about half a millisecond.
double widen_batch_seconds(std::size_t examples, std::size_t features, int rounds) {
  std::vector<std::uint8_t> bytes(examples * features, 77);
  std::vector<float> rows(examples * features);
  const auto widen = [&] {
    for (std::size_t j = 0; j < examples; ++j) widen_row(&bytes[j * features], features, &rows[j * features]);
  };
  const int repeats = static_cast<int>(std::clamp(1.5e7 / static_cast<double>(bytes.size() + 1), 1.0, 2000.0));
  double best = std::numeric_limits<double>::infinity();
  time_calls(widen, 2);
  for (int r = 0; r < rounds; ++r) best = std::min(best, time_calls(widen, repeats));
  return best;
}

// The input batch, as (outputs, examples, features), of a shape whose B operand is the batch: the forward product
// (NT, m x batch x features) or the weight gradient (NN, m x features x batch).
std::tuple<std::size_t, std::size_t, std::size_t> batch_of(const GemmShape& g) {
  return g.transpose_b ? std::tuple{g.m, g.n, g.k} : std::tuple{g.m, g.k, g.n};
}

}  // namespace

void choose_batch_products_together(KernelPlan& plan, std::string_view preferred,
                                    const std::function<double(std::size_t, std::size_t)>& widen_seconds) {
  std::vector<bool> done(plan.gemms.size(), false);
  for (std::size_t i = 0; i < plan.gemms.size(); ++i) {
    if (done[i] || !plan.gemms[i].shape.batch_operand || plan.gemms[i].seconds_of(kByteKernels) <= 0) continue;
    std::vector<PlannedGemm*> group;
    for (std::size_t j = i; j < plan.gemms.size(); ++j)
      if (!done[j] && plan.gemms[j].shape.batch_operand && plan.gemms[j].seconds_of(kByteKernels) > 0 &&
          batch_of(plan.gemms[j].shape) == batch_of(plan.gemms[i].shape)) {
        done[j] = true;
        group.push_back(&plan.gemms[j]);
      }
    const auto [outputs, examples, features] = batch_of(group.front()->shape);
    const double widen = widen_seconds(examples, features);
    // Each member's choices: the byte kernels, or its pick among the BLIS sets.
    std::vector<const std::pair<std::string, double>*> on_blis;
    for (const PlannedGemm* g : group) on_blis.push_back(pick(*g, preferred, kByteKernels));
    unsigned best_mask = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (unsigned mask = 0; mask < (1u << group.size()); ++mask) {  // bit j set: member j on BLIS
      double cost = mask != 0 ? widen : 0.0;
      for (std::size_t j = 0; j < group.size(); ++j)
        cost += (mask >> j & 1u) ? (on_blis[j] ? on_blis[j]->second : std::numeric_limits<double>::infinity())
                                 : group[j]->seconds_of(kByteKernels);
      if (cost < best_cost) {
        best_cost = cost;
        best_mask = mask;
      }
    }
    for (std::size_t j = 0; j < group.size(); ++j)
      group[j]->kernels = (best_mask >> j & 1u) ? on_blis[j]->first : std::string(kByteKernels);
  }
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
    out += shape_text(g.shape) + " " + g.kernels;
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
    std::istringstream fields(line);
    std::string ops, timing;
    if (line.rfind("default ", 0) == 0) {  // "default zen3": once, a BLIS set, nothing after it
      std::string set, extra;
      fields >> ops >> set;
      if (!plan.fallback.empty() || !arch_index(set) || fields >> extra) return std::nullopt;
      plan.fallback = set;
      continue;
    }
    PlannedGemm g;
    if (!(fields >> ops >> g.shape.m >> g.shape.n >> g.shape.k >> g.kernels)) return std::nullopt;
    // The batch is only ever op(B) of an untransposed A: "ntb" (forward) or "nnb" (weight gradient).
    if (ops.size() < 2 || ops.size() > 3 || (ops[0] != 'n' && ops[0] != 't') || (ops[1] != 'n' && ops[1] != 't') ||
        (ops.size() == 3 && (ops[2] != 'b' || ops[0] != 'n')))
      return std::nullopt;
    g.shape.transpose_a = ops[0] == 't';
    g.shape.transpose_b = ops[1] == 't';
    g.shape.batch_operand = ops.size() == 3;
    if (g.shape.m == 0 || g.shape.n == 0 || g.shape.k == 0 || !valid_kernels(g.kernels, g.shape)) return std::nullopt;
    while (fields >> timing) {
      const auto eq = timing.find('=');
      if (eq == std::string::npos || !valid_kernels(timing.substr(0, eq), g.shape)) return std::nullopt;
      char* end = nullptr;
      const double s = std::strtod(timing.c_str() + eq + 1, &end);
      if (end == timing.c_str() + eq + 1 || *end != '\0' || !(s > 0)) return std::nullopt;
      g.seconds.emplace_back(timing.substr(0, eq), s);
    }
    if (plan.find(g.shape)) return std::nullopt;  // a shape twice: which line would win is not defined
    plan.gemms.push_back(std::move(g));
  }
  return plan;
}

std::string KernelPlan::summary(std::string_view default_set) const {
  if (!fallback.empty()) default_set = fallback;
  if (gemms.empty()) return fmt::format("GEMM kernels: {} for every shape ({})", default_set, source);
  std::string out = fmt::format("GEMM kernels per shape (m x n x k; {}):", source);
  for (const PlannedGemm& g : gemms) {
    out += fmt::format(" {}{}x{}x{} {}",
                       g.shape.transpose_a || g.shape.transpose_b || g.shape.batch_operand
                           ? shape_text(g.shape).substr(0, shape_text(g.shape).find(' ')) + ":"
                           : "",
                       g.shape.m, g.shape.n, g.shape.k, g.kernels);
    const double chosen = g.seconds_of(g.kernels), others = g.seconds_of(default_set);
    if (chosen > 0 && others > 0 && g.kernels != default_set) out += fmt::format(" ({:.2f}x)", others / chosen);
    out += ',';
  }
  out.pop_back();
  return out;
}

bool per_call_contexts_available() {
#if defined(GRADSYNC_BLIS_PER_CALL_CONTEXTS)
  return true;
#else
  return false;
#endif
}

cntx_s* kernel_set_context(std::string_view name) {
#if defined(GRADSYNC_BLIS_PER_CALL_CONTEXTS)
  const auto index = arch_index(name);
  if (!index) return nullptr;
  bli_init();
  // The gks registers and initializes a native context for every set the build contains, not only for the
  // set BLIS runs by default; the array is null for sets this build lacks.
  cntx_t** contexts = bli_gks_lookup_id(static_cast<arch_t>(*index));
  return contexts ? contexts[BLIS_NAT] : nullptr;
#else
  (void)name;
  return nullptr;
#endif
}

KernelPlan measure_kernel_plan(std::span<const GemmShape> shapes, std::span<const std::string> sets,
                               std::string_view preferred, int rounds) {
  KernelPlan plan;
  plan.source = "measured";
  std::vector<cntx_t*> contexts;
  for (const std::string& set : sets) {
    contexts.push_back(kernel_set_context(set));
    if (!contexts.back()) throw std::invalid_argument(fmt::format("measure_kernel_plan: no kernel set {} here", set));
  }
  if (sets.empty()) return plan;
  for (const GemmShape& g : shapes) {
    if (plan.find(g) || g.flops() == 0) continue;
    std::vector<float> a(g.m * g.k), b(g.k * g.n), c(g.m * g.n);
    std::uint32_t x = 12345;
    const auto fill = [&x](std::vector<float>& v) {
      for (float& f : v) f = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
    };
    fill(a);
    fill(b);
    const std::size_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
    std::vector<std::string> names(sets.begin(), sets.end());
    std::vector<std::function<void()>> calls;
    for (cntx_t* cntx : contexts)
      calls.emplace_back([&, cntx] {
        gemm_in_row_blocks(g.transpose_a ? Op::T : Op::N, g.transpose_b ? Op::T : Op::N, g.m, g.n, g.k, 1.0f, a.data(),
                           lda, b.data(), ldb, 0.0f, c.data(), g.n, cntx, [] {});
      });
    if (byte_gemm_vectorized() && byte_gemm_handles(g)) {
      names.emplace_back(kByteKernels);
      calls.push_back(byte_gemm_call(g));
    }
    // About half a millisecond per sample: long enough to time, short enough that rounds interleave finely.
    const int repeats = static_cast<int>(std::clamp(5e-4 * 3e10 / g.flops(), 1.0, 2000.0));
    std::vector<double> best(names.size(), std::numeric_limits<double>::infinity());
    for (const auto& call : calls) time_calls(call, 2);  // warm caches, pools
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::size_t s = (i + static_cast<std::size_t>(r)) % names.size();  // rotate who goes first
        best[s] = std::min(best[s], time_calls(calls[s], repeats));
      }
    PlannedGemm planned{g, "", {}};
    for (std::size_t s = 0; s < names.size(); ++s) planned.seconds.emplace_back(names[s], best[s]);
    planned.kernels = pick(planned, preferred)->first;
    plan.gemms.push_back(std::move(planned));
  }
  choose_batch_products_together(plan, preferred, [rounds](std::size_t examples, std::size_t features) {
    return widen_batch_seconds(examples, features, rounds);
  });
  return plan;
}

std::string kernel_cache_key(const BlisConfig& blis) {
  // The byte kernels' build (AVX-512 or the plain loop) is part of the key: a plan measured with one must not
  // choose them for a build that has the other.
  return fmt::format("plan={} cpu={} ({}) blis={} sets={} threads={} bytes={}", kCacheVersion, cpu_model_name(),
                     cpu_signature(), bli_info_get_version_str(), fmt::join(blis.kernel_sets, ","), blis.threads,
                     byte_gemm_vectorized() ? "avx512" : "plain");
}

std::optional<std::filesystem::path> kernel_cache_file(const BlisConfig& blis) {
  std::filesystem::path dir;
  if (const char* env = std::getenv("GRADSYNC_KERNEL_CACHE"); env && *env) {
    if (std::string_view(env) == "off") return std::nullopt;
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = std::filesystem::path(xdg) / "gradsync";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::filesystem::path(home) / ".cache" / "gradsync";
  } else {
    return std::nullopt;
  }
  return dir / fmt::format("blis-kernels-{:016x}.txt", std::hash<std::string>{}(kernel_cache_key(blis)));
}

KernelPlan make_kernel_plan(std::span<const GemmShape> shapes, const BlisConfig& blis) {
  KernelPlan plan;
  if (blis.user_arch) {
    plan.source = "BLIS_ARCH_TYPE set by the user";
    return plan;
  }
  if (!per_call_contexts_available()) {
    plan.source =
        "this BLIS hides per-call contexts (shared library): BLIS_ARCH_TYPE=<set> picks another for every shape";
    return plan;
  }
  if (blis.kernel_sets.size() < 2) {
    plan.source = "no other kernel set runs here";
    return plan;
  }
  const auto file = kernel_cache_file(blis);
  const std::string key = kernel_cache_key(blis);
  KernelPlan cached;
  if (file) {
    std::ifstream in(*file);
    std::string header, key_line;
    if (std::getline(in, header) && header == kCacheHeader && std::getline(in, key_line) && key_line == "# " + key) {
      std::stringstream rest;
      rest << in.rdbuf();
      const std::string body = rest.str();
      if (body.ends_with(kCacheFooter))
        if (auto parsed = KernelPlan::from_text(body)) cached = std::move(*parsed);
    }
  }
  std::vector<GemmShape> missing;
  for (const GemmShape& g : shapes)
    if (!cached.find(g) && std::find(missing.begin(), missing.end(), g) == missing.end()) missing.push_back(g);
  if (!missing.empty()) {
    for (PlannedGemm& g : measure_kernel_plan(missing, blis.kernel_sets, blis.arch).gemms)
      cached.gemms.push_back(std::move(g));
    // A product of a batch measured now may share its batch with one the cache held: decided together again.
    choose_batch_products_together(cached, blis.arch, [](std::size_t examples, std::size_t features) {
      return widen_batch_seconds(examples, features, kPlanRounds);
    });
    // temp + rename: a reader never sees half a file, and concurrent writers (other processes, or other hosts
    // sharing a home directory: the temp name holds both) only lose an update. A write that failed (a full disk)
    // is dropped, never renamed into place.
    if (file) {
      std::error_code ec;
      std::filesystem::create_directories(file->parent_path(), ec);
      char host[256] = "";
      ::gethostname(host, sizeof host - 1);
      const auto temp = file->string() + fmt::format(".{}.{}.tmp", host, ::getpid());
      std::ofstream out(temp);
      out << kCacheHeader << "\n# " << key << "\n" << cached.to_text() << kCacheFooter;
      out.close();
      if (out) std::filesystem::rename(temp, *file, ec);
      if (!out || ec) std::filesystem::remove(temp, ec);
    }
  }
  for (const GemmShape& g : shapes)
    if (!plan.find(g)) plan.gemms.push_back(*cached.find(g));
  plan.source = missing.empty() && file ? fmt::format("cached in {}", file->string())
                                        : fmt::format("measured {} of {} shapes", missing.size(), plan.gemms.size());
  return plan;
}

bool can_run_kernels(const BlisConfig& blis, std::string_view set) {
  // A rank with the plain loop would compute other bits than the ranks with the AVX-512 byte kernels.
  if (set == kByteKernels) return byte_gemm_vectorized();
  if (set == blis.arch) return true;
  return per_call_contexts_available() &&
         std::find(blis.kernel_sets.begin(), blis.kernel_sets.end(), set) != blis.kernel_sets.end();
}

std::vector<std::string> runnable_kernels(const BlisConfig& blis) {
  std::vector<std::string> runs{blis.arch};
  for (const std::string& set : blis.kernel_sets)
    if (set != blis.arch && can_run_kernels(blis, set)) runs.push_back(set);
  if (can_run_kernels(blis, kByteKernels)) runs.emplace_back(kByteKernels);
  return runs;
}

void install_kernel_plan(const KernelPlan& plan, const BlisConfig& blis) {
  const auto refuse = [&blis](std::string_view what, std::string_view set) {
    return std::invalid_argument(fmt::format("kernel plan: {} on {}, which this process cannot run (it runs: {})", what,
                                             set, fmt::join(runnable_kernels(blis), ", ")));
  };
  const auto context_of = [&](std::string_view what, const std::string& set) -> cntx_t* {
    if (!can_run_kernels(blis, set)) throw refuse(what, set);
    // Without per-call contexts only the process's own set runs, and a null context is it.
    if (!per_call_contexts_available()) return nullptr;
    cntx_t* cntx = kernel_set_context(set);
    if (!cntx) throw std::invalid_argument(fmt::format("kernel plan: this BLIS has no context for {}", set));
    return cntx;
  };
  std::vector<InstalledGemm> gemms;
  for (const PlannedGemm& g : plan.gemms) {
    if (g.kernels != kByteKernels) {
      gemms.push_back({g.shape, context_of(shape_text(g.shape), g.kernels), false});
      continue;
    }
    if (!byte_gemm_handles(g.shape))
      throw std::invalid_argument(fmt::format("kernel plan: the byte kernels cannot compute {}", shape_text(g.shape)));
    if (!can_run_kernels(blis, kByteKernels))
      throw std::invalid_argument(
          fmt::format("kernel plan: {} on the byte kernels, which this build has without AVX-512", shape_text(g.shape)));
    gemms.push_back({g.shape, nullptr, true});
  }
  // The process's own set as the fallback is what a null context runs: the path of a plan without one.
  cntx_t* fallback =
      plan.fallback.empty() || plan.fallback == blis.arch ? nullptr : context_of("every other shape", plan.fallback);
  installed() = {plan, std::move(gemms), fallback};
}

const KernelPlan& installed_kernel_plan() { return installed().plan; }

cntx_s* planned_context(const GemmShape& shape) {
  for (const InstalledGemm& g : installed().gemms)
    if (g.shape == shape) return g.cntx;
  return installed().fallback;
}

bool planned_on_bytes(const GemmShape& shape) {
  for (const InstalledGemm& g : installed().gemms)
    if (g.shape == shape) return g.bytes;
  return false;
}

}  // namespace gradsync
