#include "collectives/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "collectives/exchange_allreduce.hpp"

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
  if (!in) throw std::runtime_error(fmt::format("tuning file {}: cannot be read", path));
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

// n bytes, p ranks, L per host (consecutive ranks share a host), H = p / L hosts (consecutive hosts share a switch).
std::optional<double> CostModel::predict(std::string_view method, std::size_t bytes, int p, int per_host,
                                         std::size_t chunk_bytes) const {
  if (p <= 1 || bytes == 0) return 0.0;
  const double n = static_cast<double>(bytes), g = gamma_s_per_byte;
  const int per = std::max(1, per_host), hosts = std::max(1, p / per);
  const auto host_of = [&](int rank) { return rank / per; };
  const auto switch_of = [&](int rank) { return hosts_per_switch > 0 ? host_of(rank) / hosts_per_switch : 0; };
  const auto between = [&](bool switches_differ) { return switches_differ ? far : inter; };
  // Across hosts a pairwise exchange pays the exchange factor.
  const auto exchange_on = [&](LinkCost l) { return LinkCost{l.alpha_s, l.beta_s_per_byte * inter_exchange_factor}; };
  // A ring across `ring_hosts` hosts waits at every step for its slowest neighbour pair: once it spans more hosts
  // than a switch holds, the pairs on either side of a switch boundary. A ring of two members is a pairwise exchange.
  const auto ring_link = [&](int members, int ring_hosts) {
    const bool spans = hosts_per_switch > 0 && ring_hosts > hosts_per_switch;
    return members == 2 ? exchange_on(between(spans)) : between(spans);
  };
  const LinkCost flat = hosts <= 1 ? intra : ring_link(p, hosts);
  // A butterfly step runs all its pairs at once and lasts as long as its slowest: inside a host, across hosts
  // (where all L ranks of a host send at once and share its link), or across switches.
  const auto step_link = [&](int pairs, auto pair) {
    bool hosts_differ = false, switches_differ = false;
    for (int i = 0; i < pairs && !switches_differ; ++i) {
      const auto [a, b] = pair(i);
      hosts_differ = hosts_differ || host_of(a) != host_of(b);
      switches_differ = switch_of(a) != switch_of(b);
    }
    if (!hosts_differ) return intra;
    const LinkCost l = exchange_on(between(switches_differ));
    return LinkCost{l.alpha_s, l.beta_s_per_byte * static_cast<double>(per)};
  };
  // The ranks beyond the largest power of two fold into their neighbours (ranks 2i and 2i+1), which puts core rank
  // c on comm rank 2c+1 or c+E: a core step 2^k apart can join ranks up to twice that apart.
  const ExchangeAllreduce::Fold shape = ExchangeAllreduce::fold_of(0, p);
  const int core = shape.core_size, levels = floor_log2(core);
  const auto link_at = [&](int distance) {
    return step_link(core, [&](int c) {
      return std::pair{ExchangeAllreduce::comm_rank_of_core(shape, c),
                       ExchangeAllreduce::comm_rank_of_core(shape, c ^ distance)};
    });
  };
  const LinkCost fold_link = step_link(shape.extra, [](int i) { return std::pair{2 * i, 2 * i + 1}; });
  const double fold = core == p ? 0.0 : 2 * (fold_link.alpha_s + n * fold_link.beta_s_per_byte) + n * g;
  const auto messages = [&](double piece) {
    return chunk_bytes == 0 ? 1.0 : std::max(1.0, std::ceil(piece / static_cast<double>(chunk_bytes)));
  };
  if (method == "ring") {
    const double seg = n / p;
    return 2 * (p - 1) * messages(seg) * flat.alpha_s + 2.0 * (p - 1) / p * n * flat.beta_s_per_byte +
           (p - 1.0) / p * n * g;
  }
  if (method == "rd") {
    double t = fold;
    for (int k = 0; k < levels; ++k) {
      const LinkCost link = link_at(1 << k);
      t += link.alpha_s + n * link.beta_s_per_byte + n * g;
    }
    return t;
  }
  if (method == "rhd") {
    double t = fold, piece = n;
    for (int k = 0; k < levels; ++k) {  // halving: step k trades half of what is left with the rank 2^k away
      piece /= 2;
      const LinkCost link = link_at(1 << k);
      t += 2 * (link.alpha_s + piece * link.beta_s_per_byte) + piece * g;  // and the doubling step back
    }
    return t;
  }
  if (method == "hier") {
    if (hosts <= 1 || per_host <= 1) return std::nullopt;
    const double local = per_host, slice = n / local;
    const double inside =
        2 * (local - 1) * (messages(slice) * intra.alpha_s + slice * intra.beta_s_per_byte) + (local - 1) * slice * g;
    // All L ranks of a host cross at once: the link's bandwidth is shared by L slices.
    const double h = hosts, piece = slice / h;
    const LinkCost cross = ring_link(hosts, hosts);  // one ring per local rank, a member per host
    const double across =
        2 * (h - 1) * (messages(piece) * cross.alpha_s + piece * local * cross.beta_s_per_byte) + (h - 1) * piece * g;
    return inside + across;
  }
  return std::nullopt;
}

}  // namespace gradsync
