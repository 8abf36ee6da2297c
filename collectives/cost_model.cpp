#include "collectives/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "collectives/exchange_allreduce.hpp"
#include "collectives/methods.hpp"

namespace gradsync {
namespace {

// Defaults: a one-node shared-memory exchange (docs/collectives.md) and the emulated 1 Gbit/s links of bench/cluster
// as bench/cluster/bench_algorithms.sh fits them (its tuning.txt; docs/algorithms.md). Pairwise exchanges between
// hosts go in eager-sized pieces (segments.hpp), so they run about as fast as one-way streams: a factor near 1.
constexpr double kIntraAlphaUs = 1.5;
constexpr double kIntraBetaNsPerByte = 0.2;
constexpr double kInterAlphaUs = 32.7;
constexpr double kInterBetaNsPerByte = 9.30;
constexpr double kGammaNsPerByte = 0.063;
constexpr double kInterExchangeFactor = 1.05;
constexpr int kMaxHostsPerSwitch = 1 << 20;

int floor_log2(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}

}  // namespace

CostModel default_cost_model() {
  CostModel m;
  m.intra = {kIntraAlphaUs * 1e-6, kIntraBetaNsPerByte * 1e-9};
  m.inter = m.far = {kInterAlphaUs * 1e-6, kInterBetaNsPerByte * 1e-9};
  m.inter_exchange_factor = kInterExchangeFactor;
  m.gamma_s_per_byte = kGammaNsPerByte * 1e-9;
  m.source = "built-in defaults";
  return m;
}

CostModel load_cost_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("tuning file {}: cannot be read: {}", path, std::strerror(errno)));
  CostModel m = default_cost_model();
  m.source = path;
  std::optional<double> far_alpha, far_beta;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto eq = line.find('=');
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    const std::string key = trim(line.substr(0, eq)), text = eq == std::string::npos ? "" : trim(line.substr(eq + 1));
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (eq == std::string::npos || text.empty() || *end != '\0' || !(value >= 0) || !std::isfinite(value))
      throw std::runtime_error(
          fmt::format("tuning file {} line {}: '{}' is not 'key = non-negative number'", path, number, line));
    if (key == "intra_alpha_us")
      m.intra.alpha_s = value * 1e-6;
    else if (key == "intra_beta_ns_per_byte")
      m.intra.beta_s_per_byte = value * 1e-9;
    else if (key == "inter_alpha_us")
      m.inter.alpha_s = value * 1e-6;
    else if (key == "inter_beta_ns_per_byte")
      m.inter.beta_s_per_byte = value * 1e-9;
    else if (key == "gamma_ns_per_byte")
      m.gamma_s_per_byte = value * 1e-9;
    else if (key == "inter_exchange_factor")
      m.inter_exchange_factor = std::max(1.0, value);
    else if (key == "far_alpha_us")
      far_alpha = value * 1e-6;
    else if (key == "far_beta_ns_per_byte")
      far_beta = value * 1e-9;
    else if (key == "hosts_per_switch") {
      if (value != std::floor(value) || value > kMaxHostsPerSwitch)
        throw std::runtime_error(
            fmt::format("tuning file {} line {}: hosts_per_switch must be a whole number from 0 to {}, got '{}'", path,
                        number, kMaxHostsPerSwitch, text));
      m.hosts_per_switch = static_cast<int>(value);
    } else
      throw std::runtime_error(fmt::format("tuning file {} line {}: unknown key '{}'", path, number, key));
  }
  m.far = {far_alpha.value_or(m.inter.alpha_s), far_beta.value_or(m.inter.beta_s_per_byte)};
  return m;
}

CostModel find_cost_model() {
  if (const char* path = std::getenv("GRADSYNC_TUNING"); path && *path) return load_cost_model(path);
  if (const char* home = std::getenv("HOME"); home && *home) {
    const std::string path = std::string(home) + "/.config/gradsync/tuning.txt";
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return load_cost_model(path);
  }
  return default_cost_model();
}

std::string tuning_variable_problem() {
  const char* path = std::getenv("GRADSYNC_TUNING");
  if (!path || !*path) return {};
  try {
    load_cost_model(path);
  } catch (const std::runtime_error& e) {
    return fmt::format("GRADSYNC_TUNING={}: {}", path, e.what());
  }
  return {};
}

CostLinks::CostLinks(const CostModel& model, const CostQuery& query)
    : model_(model), query_(query), per_host_(std::max(1, query.ranks_per_host)),
      hosts_(std::max(1, query.ranks / per_host_)) {}

LinkCost CostLinks::exchange_on(LinkCost link) const {
  return {link.alpha_s, link.beta_s_per_byte * model_.inter_exchange_factor};
}

LinkCost CostLinks::ring(int members, int ring_hosts) const {
  const bool spans = model_.hosts_per_switch > 0 && ring_hosts > model_.hosts_per_switch;
  const LinkCost link = spans ? model_.far : model_.inter;
  return members == 2 ? exchange_on(link) : link;
}

template <class Pair>
LinkCost CostLinks::step_link(int pairs, Pair pair) const {
  const auto host_of = [&](int rank) { return rank / per_host_; };
  const auto switch_of = [&](int rank) {
    return model_.hosts_per_switch > 0 ? host_of(rank) / model_.hosts_per_switch : 0;
  };
  bool hosts_differ = false, switches_differ = false;
  for (int i = 0; i < pairs && !switches_differ; ++i) {
    const auto [a, b] = pair(i);
    hosts_differ = hosts_differ || host_of(a) != host_of(b);
    switches_differ = switch_of(a) != switch_of(b);
  }
  if (!hosts_differ) return model_.intra;
  const LinkCost l = exchange_on(switches_differ ? model_.far : model_.inter);
  return {l.alpha_s, l.beta_s_per_byte * static_cast<double>(per_host_)};
}

// The ranks beyond the largest power of two fold into their neighbours (ranks 2i and 2i+1), which puts core rank c
// on comm rank 2c+1 or c+E: a core step 2^k apart can join ranks up to twice that apart.
LinkCost CostLinks::butterfly(int distance) const {
  const ExchangeAllreduce::Fold shape = ExchangeAllreduce::fold_of(0, query_.ranks);
  return step_link(shape.core_size, [&](int c) {
    return std::pair{ExchangeAllreduce::comm_rank_of_core(shape, c),
                     ExchangeAllreduce::comm_rank_of_core(shape, c ^ distance)};
  });
}

int CostLinks::butterfly_levels() const { return floor_log2(ExchangeAllreduce::fold_of(0, query_.ranks).core_size); }

double CostLinks::fold_seconds(double n) const {
  const ExchangeAllreduce::Fold shape = ExchangeAllreduce::fold_of(0, query_.ranks);
  if (shape.core_size == query_.ranks) return 0;
  const LinkCost link = step_link(shape.extra, [](int i) { return std::pair{2 * i, 2 * i + 1}; });
  return 2 * (link.alpha_s + n * link.beta_s_per_byte) + n * model_.gamma_s_per_byte;
}

double CostLinks::messages(double piece) const {
  return query_.chunk_bytes == 0 ? 1.0 : std::max(1.0, std::ceil(piece / static_cast<double>(query_.chunk_bytes)));
}

std::optional<double> CostModel::predict(std::string_view method, std::size_t bytes, int ranks, int ranks_per_host,
                                         std::size_t chunk_bytes) const {
  const AllreduceMethod* m = find_allreduce_method(method);
  if (!m || !m->cost) return std::nullopt;
  if (ranks <= 1 || bytes == 0) return 0.0;
  return m->cost(*this, {bytes, ranks, ranks_per_host, chunk_bytes});
}

}  // namespace gradsync
