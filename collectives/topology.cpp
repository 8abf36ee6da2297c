#include "collectives/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace gradsync {
namespace {

constexpr TopologyInfo kTopologies[] = {
    {Topology::ring, "ring", "rank +- 1, weights 1/3: the sparsest connected graph, the slowest to agree"},
    {Topology::torus, "torus", "a 2-D torus of rows x columns (the most square that divides p), weights 1/5"},
    {Topology::exp, "exp", "rank +- 2^k for every 2^k < p, uniform weights: log2 p peers, a gap that shrinks slowly"},
    {Topology::exp1, "exp1", "one peer a step, rank XOR 2^(t mod log2 p), weights 1/2: exact mean after log2 p steps"},
    {Topology::complete, "complete", "every rank, 1/p: the allreduce average, at p - 1 messages a rank"},
};

int ceil_log2(int p) {
  int k = 0;
  while ((1L << k) < p) ++k;
  return k;
}

// Uniform weights over the closed neighbourhood of `ranks` (which may hold duplicates and `self`).
Neighbourhood uniform(std::vector<int> ranks, int self) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  ranks.erase(std::remove(ranks.begin(), ranks.end(), self), ranks.end());
  Neighbourhood n;
  const double w = 1.0 / static_cast<double>(ranks.size() + 1);
  n.self_weight = w;
  for (int r : ranks) n.peers.push_back({r, w});
  return n;
}

int wrap_rank(long r, int p) { return static_cast<int>(((r % p) + p) % p); }

// Dense products for spectral_gap: c = a * b, all n x n.
std::vector<double> multiply(const std::vector<double>& a, const std::vector<double>& b, int n) {
  std::vector<double> c(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const double aik = a[static_cast<std::size_t>(i) * n + k];
      if (aik == 0) continue;
      for (int j = 0; j < n; ++j) c[static_cast<std::size_t>(i) * n + j] += aik * b[static_cast<std::size_t>(k) * n + j];
    }
  return c;
}

// The gap of a W that looks the same from every rank: ring, exp and complete are circulant (rank 0's peer q sits at
// offset q of Z_p) and torus is the same over Z_rows x Z_columns. The group's characters are then W's eigenvectors,
// so each eigenvalue is rank 0's weights summed against one character: O(p * degree) where the dense road is O(p^3)
// (0.78 s at p = 256, some 64 times that at 1024). W is symmetric, so its singular values are the |lambda|s.
double translation_invariant_gap(Topology t, int p) {
  const Neighbourhood n = neighbourhood(t, p, 0, 0);
  const TorusShape shape = t == Topology::torus ? torus_shape(p) : TorusShape{1, p};
  double second = 0;
  for (int a = 0; a < shape.rows; ++a)
    for (int b = 0; b < shape.columns; ++b) {
      if (a == 0 && b == 0) continue;  // the all-ones vector, eigenvalue 1
      double lambda = n.self_weight;
      for (const Peer& q : n.peers) {
        const double phase = static_cast<double>(a) * (q.rank / shape.columns) / shape.rows +
                             static_cast<double>(b) * (q.rank % shape.columns) / shape.columns;
        lambda += q.weight * std::cos(2 * std::numbers::pi * phase);
      }
      second = std::max(second, std::abs(lambda));
    }
  return 1 - second;
}

}  // namespace

std::span<const TopologyInfo> topology_table() { return kTopologies; }

const TopologyInfo& topology_info(Topology t) { return kTopologies[static_cast<std::size_t>(t)]; }

const TopologyInfo* find_topology(std::string_view name) {
  for (const TopologyInfo& t : kTopologies)
    if (t.name == name) return &t;
  return nullptr;
}

std::string topology_names(std::string_view separator) {
  std::string names;
  for (const TopologyInfo& t : kTopologies) names += fmt::format("{}{}", names.empty() ? "" : separator, t.name);
  return names;
}

TorusShape torus_shape(int p) {
  int rows = 1;
  for (int r = 1; static_cast<long>(r) * r <= p; ++r)
    if (p % r == 0) rows = r;
  return {rows, p / std::max(rows, 1)};
}

int topology_period(Topology t, int p) { return t == Topology::exp1 ? std::max(1, ceil_log2(p)) : 1; }

Neighbourhood neighbourhood(Topology t, int p, int rank, long step) {
  if (p < 1 || rank < 0 || rank >= p || step < 0)
    throw std::invalid_argument(fmt::format("neighbourhood: rank {} of {} at step {}", rank, p, step));
  switch (t) {
    case Topology::ring: return uniform({wrap_rank(rank - 1L, p), wrap_rank(rank + 1L, p)}, rank);
    case Topology::torus: {
      const TorusShape s = torus_shape(p);
      const int row = rank / s.columns, col = rank % s.columns;
      const auto at = [&](int r, int c) { return wrap_rank(r, s.rows) * s.columns + wrap_rank(c, s.columns); };
      return uniform({at(row - 1, col), at(row + 1, col), at(row, col - 1), at(row, col + 1)}, rank);
    }
    case Topology::exp: {
      std::vector<int> ranks;
      for (long d = 1; d < p; d *= 2) ranks.insert(ranks.end(), {wrap_rank(rank - d, p), wrap_rank(rank + d, p)});
      return uniform(std::move(ranks), rank);
    }
    case Topology::exp1: {
      if (p == 1) return {};
      const int partner = rank ^ (1 << (step % topology_period(t, p)));
      if (partner >= p) return {};
      return {0.5, {{partner, 0.5}}};
    }
    case Topology::complete: {
      std::vector<int> ranks(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) ranks[static_cast<std::size_t>(r)] = r;
      return uniform(std::move(ranks), rank);
    }
  }
  throw std::invalid_argument("neighbourhood: unknown topology");
}

std::vector<double> mixing_matrix(Topology t, int p, long step) {
  std::vector<double> w(static_cast<std::size_t>(p) * p, 0.0);
  for (int i = 0; i < p; ++i) {
    const Neighbourhood n = neighbourhood(t, p, i, step);
    const std::size_t row = static_cast<std::size_t>(i) * p;
    w[row + i] = n.self_weight;
    for (const Peer& peer : n.peers) w[row + peer.rank] = peer.weight;
  }
  return w;
}

double spectral_gap(Topology t, int p) {
  if (p == 1) return 1;
  if (t != Topology::exp1) return translation_invariant_gap(t, p);
  if ((p & (p - 1)) == 0) return 1;  // one period of weights 1/2 is J/p exactly: the dense road would find S = 0
  const int period = topology_period(t, p);
  std::vector<double> m = mixing_matrix(t, p, 0);
  for (int s = 1; s < period; ++s) m = multiply(mixing_matrix(t, p, s), m, p);
  // S = M^T M - J/p: M is doubly stochastic, so the all-ones vector is S's eigenvector for 0 and the rest of M^T M's
  // spectrum is untouched; its largest eigenvalue is sigma_2(M)^2.
  std::vector<double> s(static_cast<std::size_t>(p) * p, 0.0);
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < p; ++j) {
      double dot = 0;
      for (int k = 0; k < p; ++k) dot += m[static_cast<std::size_t>(k) * p + i] * m[static_cast<std::size_t>(k) * p + j];
      s[static_cast<std::size_t>(i) * p + j] = dot - 1.0 / p;
    }
  const std::vector<double> eig = symmetric_eigenvalues(std::move(s), p);
  const double top = std::max(0.0, *std::max_element(eig.begin(), eig.end()));
  const double sigma2 = std::min(1.0, std::sqrt(top));
  return 1 - std::pow(sigma2, 1.0 / period);
}

std::vector<double> symmetric_eigenvalues(std::vector<double> a, int n) {
  const auto at = [&](int i, int j) -> double& { return a[static_cast<std::size_t>(i) * n + j]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, total = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) (i == j ? total : off) += at(i, j) * at(i, j);
    if (off <= 1e-30 * (total + off) || off < 1e-300) break;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (std::abs(apq) < 1e-300) continue;
        // The rotation that zeroes a[p][q] (Golub and Van Loan, the symmetric Schur decomposition).
        const double theta = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) {  // columns p and q
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // rows p and q
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> eig(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) eig[static_cast<std::size_t>(i)] = at(i, i);
  return eig;
}

}  // namespace gradsync
