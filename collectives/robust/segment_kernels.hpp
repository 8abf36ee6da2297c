#pragma once
// The robust aggregators' arithmetic on one segment of coordinates: pure functions, no communication. The segmented
// form (robust_aggregation.hpp) runs them on each rank's 1/p of the coordinates, the gathered form on the whole
// vector at the root; both give the same selections because the distance and norm totals they need are passed in.
// Every sum is taken in double, in ascending rank order (or ascending value order, for order statistics), and
// rounded to float once, so a rank's result depends only on the values, never on which rank computes it.
#include <cstddef>
#include <span>
#include <vector>

namespace gradsync {

// n workers' copies of the same `len` coordinates: worker i's at data + i * stride. Not owned.
struct SegmentRows {
  const float* data = nullptr;
  std::size_t stride = 0;
  std::size_t len = 0;
  int n = 0;
  const float* row(int i) const { return data + static_cast<std::size_t>(i) * stride; }
};

// Index of the pair (i, k), i < k < n, in a packed upper triangle of n (n - 1) / 2 entries.
inline std::size_t pair_index(int i, int k, int n) {
  const auto a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(k), m = static_cast<std::size_t>(n);
  return a * m - a * (a + 1) / 2 + (b - a - 1);
}
inline std::size_t pair_count(int n) { return static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) / 2; }

// out[j] = the mean of rows `chosen` (ascending ranks) at coordinate j. out.size() == rows.len.
void coordinate_mean(const SegmentRows& rows, std::span<const int> chosen, std::span<float> out);
// out[j] = the median of the n values at j (even n: the mean of the middle two). `column` is scratch (resized).
void coordinate_median(const SegmentRows& rows, std::span<float> out, std::vector<double>& column);
// out[j] = the mean of the n - 2b middle values at j. Requires n > 2b.
void coordinate_trimmed_mean(const SegmentRows& rows, int b, std::span<float> out, std::vector<double>& column);
// Bulyan's second stage: at each j, of the values of rows `chosen`, the mean of the `beta` closest to their median
// (ties: the smaller value first). Requires 1 <= beta <= chosen.size().
void coordinate_bulyan(const SegmentRows& rows, std::span<const int> chosen, int beta, std::span<float> out,
                       std::vector<double>& column);

// distances[pair_index(i, k, n)] += the sum over the segment of (x_i - x_k)^2. distances.size() == pair_count(n).
void add_pair_distances(const SegmentRows& rows, std::span<double> distances);
// squares[i] += the sum over the segment of (x_i - v)^2, v = `center` (rows.len values). squares.size() == n.
void add_center_distances(const SegmentRows& rows, std::span<const float> center, std::span<double> squares);
// One centered-clipping step on the segment: center[j] += mean_i (x_i[j] - center[j]) * min(1, tau / ||x_i - v||),
// with squares[i] = ||x_i - v||^2 over the whole vector (a worker at distance 0 keeps weight 1).
void clip_step(const SegmentRows& rows, std::span<const double> squares, double tau, std::span<float> center);

// Krum's selections from the total distances (packed as above) of n workers; ties go to the lower rank.
// Krum score of worker i among `among` (ascending ranks, including i): the sum of its smallest
// clamp(|among| - f - 2, 0, |among| - 1) squared distances to the others in `among`.
double krum_score(std::span<const double> distances, int n, std::span<const int> among, int i, int f,
                  std::vector<double>& scratch);
// Krum: the worker with the least score among all n.
int krum_select(std::span<const double> distances, int n, int f, std::vector<double>& scratch);
// Multi-Krum: the m workers with the least scores (all n scored once), ascending ranks, into `chosen`.
void multikrum_select(std::span<const double> distances, int n, int f, int m, std::vector<int>& chosen,
                      std::vector<double>& scratch);
// Bulyan's first stage: theta = n - 2f workers picked one at a time by Krum among those not yet picked, ascending
// ranks, into `chosen`.
void bulyan_select(std::span<const double> distances, int n, int f, std::vector<int>& chosen,
                   std::vector<double>& scratch);

}  // namespace gradsync
