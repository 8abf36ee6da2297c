#include "trainers/families/fedavg/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "model/rng.hpp"

namespace gradsync {
namespace {

// Streams of the run's seed that nothing else draws from (the training shuffles use 0x1000 + epoch).
constexpr std::uint64_t kPartitionStream = 0x2000;

void shuffle(std::span<std::uint32_t> v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// Uniform in (0, 1): never 0, so its logarithm is finite.
double open_uniform(Rng& rng) { return (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53; }

double standard_normal(Rng& rng) {  // Box-Muller: one of the pair is enough here
  return std::sqrt(-2.0 * std::log(open_uniform(rng))) * std::cos(2.0 * 3.14159265358979323846 * open_uniform(rng));
}

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1/shape). Our own rather than
// std::gamma_distribution, whose draws differ between standard libraries.
double gamma_draw(double shape, Rng& rng) {
  if (shape < 1) return gamma_draw(shape + 1, rng) * std::pow(open_uniform(rng), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = standard_normal(rng), v0 = 1 + c * x;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0, u = open_uniform(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Run k of `n` items cut into `parts` runs whose sizes differ by at most one starts at cut(k).
std::size_t cut(std::size_t k, std::size_t n, std::size_t parts) { return k * n / parts; }

ClientPartitions deal_iid(std::size_t n, std::size_t clients, Rng& rng) {
  ClientPartitions p;
  p.examples.resize(n);
  std::iota(p.examples.begin(), p.examples.end(), 0u);
  shuffle(p.examples, rng);
  for (std::size_t k = 0; k <= clients; ++k) p.starts.push_back(cut(k, n, clients));
  return p;
}

ClientPartitions deal_shards(std::span<const std::uint8_t> labels, std::size_t clients, std::size_t per_client,
                             Rng& rng) {
  const std::size_t n = labels.size(), shards = clients * per_client;
  if (n < shards)
    throw std::invalid_argument(
        fmt::format("--partition shards:{}: {} clients need {} shards, but there are only {} "
                    "examples",
                    per_client, clients, shards, n));
  std::vector<std::uint32_t> sorted(n);
  std::iota(sorted.begin(), sorted.end(), 0u);
  std::ranges::stable_sort(sorted, [&](std::uint32_t a, std::uint32_t b) { return labels[a] < labels[b]; });
  std::vector<std::uint32_t> order(shards);
  std::iota(order.begin(), order.end(), 0u);
  shuffle(order, rng);
  ClientPartitions p;
  p.examples.reserve(n);
  p.starts.push_back(0);
  for (std::size_t k = 0; k < clients; ++k) {
    for (std::size_t j = 0; j < per_client; ++j) {
      const std::size_t s = order[k * per_client + j];
      p.examples.insert(p.examples.end(), sorted.begin() + static_cast<std::ptrdiff_t>(cut(s, n, shards)),
                        sorted.begin() + static_cast<std::ptrdiff_t>(cut(s + 1, n, shards)));
    }
    p.starts.push_back(p.examples.size());
  }
  return p;
}

ClientPartitions deal_dirichlet(std::span<const std::uint8_t> labels, int classes, std::size_t clients, double alpha,
                                Rng& rng) {
  std::vector<std::vector<std::uint32_t>> by_class(static_cast<std::size_t>(classes)), own(clients);
  for (std::size_t i = 0; i < labels.size(); ++i) by_class[labels[i]].push_back(static_cast<std::uint32_t>(i));
  std::vector<double> share(clients);
  for (std::vector<std::uint32_t>& members : by_class) {
    shuffle(members, rng);
    double total = 0;
    for (double& s : share) total += s = gamma_draw(alpha, rng);
    // Cut points from the cumulative proportions: every member lands in exactly one client.
    double cumulative = 0;
    std::size_t begin = 0;
    for (std::size_t k = 0; k < clients; ++k) {
      cumulative += share[k];
      const std::size_t end =
          k + 1 == clients ? members.size()
                           : std::min(members.size(), static_cast<std::size_t>(std::llround(
                                                          cumulative / total * static_cast<double>(members.size()))));
      own[k].insert(own[k].end(), members.begin() + static_cast<std::ptrdiff_t>(begin),
                    members.begin() + static_cast<std::ptrdiff_t>(std::max(begin, end)));
      begin = std::max(begin, end);
    }
  }
  ClientPartitions p;
  p.examples.reserve(labels.size());
  p.starts.push_back(0);
  for (std::vector<std::uint32_t>& mine : own) {
    shuffle(mine, rng);  // not grouped by label: the client's own epochs shuffle again, but a prefix should be mixed too
    p.examples.insert(p.examples.end(), mine.begin(), mine.end());
    p.starts.push_back(p.examples.size());
  }
  return p;
}

}  // namespace

ClientPartitions partition_clients(std::span<const std::uint8_t> labels, int classes, std::size_t clients,
                                   const PartitionSpec& spec, std::uint64_t seed) {
  if (clients == 0) throw std::invalid_argument("partition_clients: no clients");
  if (labels.empty()) throw std::invalid_argument("partition_clients: no examples");
  Rng rng(seed, kPartitionStream);
  switch (spec.kind) {
    case PartitionKind::iid: return deal_iid(labels.size(), clients, rng);
    case PartitionKind::shards: return deal_shards(labels, clients, static_cast<std::size_t>(spec.shards), rng);
    case PartitionKind::dirichlet: return deal_dirichlet(labels, classes, clients, spec.alpha, rng);
  }
  throw std::invalid_argument("partition_clients: unknown partition");
}

}  // namespace gradsync
