#include "model/kernels/blis_setup.hpp"

#include <blis.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "model/kernels/blis_arch.hpp"

namespace gradsync {
namespace {

// Runs `probe` in a forked child and returns the int it writes to the pipe, or nothing if the child failed
// (BLIS aborts when asked for a kernel set that this build does not contain; that must not kill us).
template <class Probe>
std::optional<int> in_child(Probe probe) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    const int value = probe();
    const bool ok = write(fds[1], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  int value = 0;
  const bool got = read(fds[0], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return value;
}

BlisConfig& last_configuration() {
  static BlisConfig config;
  return config;
}

int detected_arch_id() {
  bli_init();
  return static_cast<int>(bli_arch_query_id());
}

// True if BLIS, forced to kernel set `index`, initializes and multiplies a small matrix correctly.
bool kernel_set_runs(int index) {
  const auto ok = in_child([index] {
    setenv("BLIS_ARCH_TYPE", std::to_string(index).c_str(), 1);
    bli_init();
    constexpr dim_t n = 24;
    std::vector<float> a(n * n, 1.0f), b(n * n, 2.0f), c(n * n, 0.0f);
    float one = 1.0f, zero = 0.0f;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, n, n, n, &one, a.data(), n, 1, b.data(), n, 1, &zero, c.data(), n, 1);
    for (float v : c)
      if (std::fabs(v - 2.0f * n) > 1e-3f) return 0;
    return static_cast<int>(bli_arch_query_id()) == index ? 1 : 0;
  });
  return ok && *ok == 1;
}

}  // namespace

std::string BlisConfig::summary() const {
  const Isa isa = active_isa();
  return fmt::format("BLIS kernels: {} ({}), {} thread{}; vector loops: {}{}", arch, reason, threads,
                     threads == 1 ? "" : "s", isa_name(isa),
                     isa == cpu_isa() ? "" : fmt::format(" ({}; this CPU runs {})", kIsaVariable, isa_name(cpu_isa())));
}

BlisConfig configure_blis(int threads) {
  BlisConfig config;
  config.threads = threads;
  if (const char* user = std::getenv("BLIS_ARCH_TYPE"); user && *user) {
    const auto value = blis_arch_env_value(user);
    if (!value) {
      std::vector<std::string> names;
      for (int i = 0; i < BLIS_NUM_ARCHS; ++i) names.emplace_back(bli_arch_string(static_cast<arch_t>(i)));
      throw std::invalid_argument(fmt::format("BLIS_ARCH_TYPE={}: neither a number nor a kernel set of this BLIS ({})",
                                              user, fmt::join(names, ", ")));
    }
    config.reason = fmt::format("BLIS_ARCH_TYPE={} set by the user", user);
    setenv("BLIS_ARCH_TYPE", value->c_str(), 1);
    config.user_arch = true;
  } else if (const auto detected = in_child(detected_arch_id); !detected) {
    config.reason = "detected by BLIS (probe failed; kept BLIS's choice)";
  } else {
    const std::string detected_name = bli_arch_string(static_cast<arch_t>(*detected));
    const CpuFeatures cpu = host_cpu_features();
    std::vector<std::string> runnable;
    for (const std::string& name : candidate_kernel_sets(cpu))
      if (const auto index = blis_arch_index(name); index && kernel_set_runs(*index)) runnable.push_back(name);
    config.kernel_sets = runnable;
    if (const auto better = better_kernel_set(detected_name, cpu, runnable)) {
      setenv("BLIS_ARCH_TYPE", std::to_string(*blis_arch_index(*better)).c_str(), 1);
      config.reason = detected_name == "generic"
                          ? fmt::format("BLIS chose generic, not knowing this CPU; selected {}", *better)
                          : fmt::format("BLIS chose {}, but {}={} hides AVX-512; selected {}", detected_name,
                                        kIsaVariable, isa_name(active_isa()), *better);
    } else {
      config.reason = "detected by BLIS";
    }
  }
  bli_init();
  bli_thread_set_num_threads(threads);
  config.arch = bli_arch_string(bli_arch_query_id());
  last_configuration() = config;
  return config;
}

const BlisConfig& configured_blis() { return last_configuration(); }

}  // namespace gradsync
