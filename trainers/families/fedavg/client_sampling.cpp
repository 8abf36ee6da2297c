#include "trainers/families/fedavg/client_sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "model/rng.hpp"

namespace gradsync {

namespace {
constexpr std::uint64_t kSamplingStream = 0x3000'0000;  // + round: apart from the shuffles' and the partition's
}

std::size_t clients_per_round(std::size_t clients, double fraction) {
  // The small slack keeps 0.1 * 100 at 10 where the product rounds to 9.999...
  const auto m = static_cast<std::size_t>(std::floor(fraction * static_cast<double>(clients) + 1e-9));
  return std::clamp<std::size_t>(m, 1, std::max<std::size_t>(clients, 1));
}

std::vector<std::uint32_t> sample_clients(std::size_t clients, std::size_t m, std::uint64_t seed, std::int64_t round) {
  if (m > clients) throw std::invalid_argument("sample_clients: more clients asked for than there are");
  std::vector<std::uint32_t> all(clients);
  std::iota(all.begin(), all.end(), 0u);
  Rng rng(seed, kSamplingStream + static_cast<std::uint64_t>(round));
  for (std::size_t i = 0; i < m; ++i) std::swap(all[i], all[i + rng.below(clients - i)]);
  all.resize(m);
  return all;
}

std::vector<std::size_t> my_clients(std::size_t sampled, int index, int workers) {
  std::vector<std::size_t> mine;
  for (std::size_t j = static_cast<std::size_t>(index); j < sampled; j += static_cast<std::size_t>(workers))
    mine.push_back(j);
  return mine;
}

}  // namespace gradsync
