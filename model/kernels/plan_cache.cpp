#include "model/kernels/plan_cache.hpp"

#include <blis.h>
#include <fmt/format.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "model/kernels/byte_gemm.hpp"
#include "model/kernels/kernel_sets.hpp"
#include "model/kernels/plan_timing.hpp"

namespace gradsync {
namespace {

// v3: the default set wins within 10%; v4: the byte kernels are a candidate for the input layer's products;
// v5: the products of one batch are chosen together; v6: widening a batch is charged on rows out of cache, and the
// AVX2 byte kernels take more than 6 outputs in two passes. A change to the rules that choose, or to a candidate's
// speed, takes a new version as well as a change of format: a plan chosen under the old rules is not reused. The
// version is part of the cache key too, so that builds of two versions on one machine keep a file each instead of
// measuring again whenever the other wrote last.
constexpr std::string_view kCacheVersion = "v6";
constexpr std::string_view kCacheHeader = "# gradsync BLIS kernel plan";
// The last line: a file cut short (a full disk, a copy interrupted) can end in a line that still parses ("zen3"
// cut to "zen"), so a file without it is not read.
constexpr std::string_view kCacheFooter = "# end\n";

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

// The plan in `file` if its header and key line match `key` and it ends with the footer; else an empty plan.
KernelPlan read_cached_plan(const std::filesystem::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string header, key_line;
  if (std::getline(in, header) && header == kCacheHeader && std::getline(in, key_line) && key_line == "# " + key) {
    std::stringstream rest;
    rest << in.rdbuf();
    const std::string body = rest.str();
    if (body.ends_with(kCacheFooter))
      if (auto parsed = KernelPlan::from_text(body)) return std::move(*parsed);
  }
  return {};
}

// temp + rename: a reader never sees half a file, and concurrent writers (other processes, or other hosts
// sharing a home directory: the temp name holds both) only lose an update. A write that failed (a full disk)
// is dropped, never renamed into place.
void write_cached_plan(const std::filesystem::path& file, const std::string& key, const KernelPlan& plan) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  const auto temp = file.string() + fmt::format(".{}.{}.tmp", host, ::getpid());
  std::ofstream out(temp);
  out << kCacheHeader << "\n# " << key << "\n" << plan.to_text() << kCacheFooter;
  out.close();
  if (out) std::filesystem::rename(temp, file, ec);
  if (!out || ec) std::filesystem::remove(temp, ec);
}

// Why make_kernel_plan measures nothing here, or nothing if it may.
std::optional<std::string> no_plan_reason(const BlisConfig& blis) {
  if (blis.user_arch) return "BLIS_ARCH_TYPE set by the user";
  if (!per_call_contexts_available())
    return "this BLIS hides per-call contexts (shared library): BLIS_ARCH_TYPE=<set> picks another for every shape";
  if (blis.kernel_sets.size() < 2) return "no other kernel set runs here";
  return std::nullopt;
}

}  // namespace

std::string kernel_cache_key(const BlisConfig& blis) {
  // Which byte kernels run (AVX-512, AVX2 or the plain loop) is part of the key: a plan measured with one must
  // not choose them for a process that runs another.
  return fmt::format("plan={} cpu={} ({}) blis={} sets={} threads={} bytes={}", kCacheVersion, cpu_model_name(),
                     cpu_signature(), bli_info_get_version_str(), fmt::join(blis.kernel_sets, ","), blis.threads,
                     byte_gemm_kernels());
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
  if (auto why = no_plan_reason(blis)) {
    plan.source = std::move(*why);
    return plan;
  }
  const auto file = kernel_cache_file(blis);
  const std::string key = kernel_cache_key(blis);
  KernelPlan cached = file ? read_cached_plan(*file, key) : KernelPlan{};
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
    if (file) write_cached_plan(*file, key, cached);
  }
  for (const GemmShape& g : shapes)
    if (!plan.find(g)) plan.gemms.push_back(*cached.find(g));
  plan.source = missing.empty() && file ? fmt::format("cached in {}", file->string())
                                        : fmt::format("measured {} of {} shapes", missing.size(), plan.gemms.size());
  return plan;
}

}  // namespace gradsync
