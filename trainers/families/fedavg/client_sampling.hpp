#pragma once
// Which clients take part in a federated round, and which rank trains each: derived from the run's seed and the
// round alone, so every rank agrees without a message and a resumed run draws what the uninterrupted one would.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradsync {

// m = max(floor(C * K), 1) clients a round (McMahan et al. 2017: C = 0 means one client). 0 <= fraction <= 1.
std::size_t clients_per_round(std::size_t clients, double fraction);

// The `m` clients (m <= clients) of round `round`, without repeats, in the order drawn: a partial Fisher-Yates
// shuffle of 0..clients-1 on a stream of `seed` of the round's own.
std::vector<std::uint32_t> sample_clients(std::size_t clients, std::size_t m, std::uint64_t seed, std::int64_t round);

// The position in `sampled` of each client worker `index` of `workers` trains: every workers-th, starting at
// `index`, so the ranks' client counts differ by at most one.
std::vector<std::size_t> my_clients(std::size_t sampled, int index, int workers);

}  // namespace gradsync
