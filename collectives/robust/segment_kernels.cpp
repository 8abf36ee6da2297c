#include "collectives/robust/segment_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gradsync {
namespace {

// The n values at coordinate j, ascending, into `column`.
void sorted_column(const SegmentRows& rows, std::size_t j, std::vector<double>& column) {
  column.resize(static_cast<std::size_t>(rows.n));
  for (int i = 0; i < rows.n; ++i) column[static_cast<std::size_t>(i)] = rows.row(i)[j];
  std::sort(column.begin(), column.end());
}

double median_of_sorted(std::span<const double> v) {
  const std::size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : (v[h - 1] + v[h]) / 2;
}

double distance(std::span<const double> distances, int n, int i, int k) {
  return i == k ? 0.0 : distances[i < k ? pair_index(i, k, n) : pair_index(k, i, n)];
}

}  // namespace

void coordinate_mean(const SegmentRows& rows, std::span<const int> chosen, std::span<float> out) {
  const double scale = 1.0 / static_cast<double>(chosen.size());
  for (std::size_t j = 0; j < rows.len; ++j) {
    double sum = 0;
    for (const int i : chosen) sum += rows.row(i)[j];
    out[j] = static_cast<float>(sum * scale);
  }
}

void coordinate_median(const SegmentRows& rows, std::span<float> out, std::vector<double>& column) {
  for (std::size_t j = 0; j < rows.len; ++j) {
    sorted_column(rows, j, column);
    out[j] = static_cast<float>(median_of_sorted(column));
  }
}

void coordinate_trimmed_mean(const SegmentRows& rows, int b, std::span<float> out, std::vector<double>& column) {
  const auto keep = static_cast<std::size_t>(rows.n - 2 * b);
  for (std::size_t j = 0; j < rows.len; ++j) {
    sorted_column(rows, j, column);
    double sum = 0;
    for (std::size_t i = 0; i < keep; ++i) sum += column[static_cast<std::size_t>(b) + i];
    out[j] = static_cast<float>(sum / static_cast<double>(keep));
  }
}

// The beta values closest to the median form a window of the sorted values; it grows from the median one value at
// a time towards the closer side (the lower one on a tie).
void coordinate_bulyan(const SegmentRows& rows, std::span<const int> chosen, int beta, std::span<float> out,
                       std::vector<double>& column) {
  const std::size_t t = chosen.size();
  column.resize(t);
  for (std::size_t j = 0; j < rows.len; ++j) {
    for (std::size_t c = 0; c < t; ++c) column[c] = rows.row(chosen[c])[j];
    std::sort(column.begin(), column.end());
    const double med = median_of_sorted(column);
    std::size_t lo = t / 2, hi = t / 2;  // the window [lo, hi) starts empty at the median's place
    for (int taken = 0; taken < beta; ++taken) {
      const bool take_low = hi == t || (lo > 0 && med - column[lo - 1] <= column[hi] - med);
      if (take_low)
        --lo;
      else
        ++hi;
    }
    double sum = 0;
    for (std::size_t c = lo; c < hi; ++c) sum += column[c];
    out[j] = static_cast<float>(sum / beta);
  }
}

void add_pair_distances(const SegmentRows& rows, std::span<double> distances) {
  for (int i = 0; i < rows.n; ++i)
    for (int k = i + 1; k < rows.n; ++k) {
      const float *a = rows.row(i), *b = rows.row(k);
      double sum = 0;
      for (std::size_t j = 0; j < rows.len; ++j) {
        const double d = static_cast<double>(a[j]) - b[j];
        sum += d * d;
      }
      distances[pair_index(i, k, rows.n)] += sum;
    }
}

void add_center_distances(const SegmentRows& rows, std::span<const float> center, std::span<double> squares) {
  for (int i = 0; i < rows.n; ++i) {
    const float* a = rows.row(i);
    double sum = 0;
    for (std::size_t j = 0; j < rows.len; ++j) {
      const double d = static_cast<double>(a[j]) - center[j];
      sum += d * d;
    }
    squares[static_cast<std::size_t>(i)] += sum;
  }
}

void clip_step(const SegmentRows& rows, std::span<const double> squares, double tau, std::span<float> center) {
  // The weights are computed from the totals alone, so every segment's owner uses the same ones.
  thread_local std::vector<double> weights;
  weights.resize(static_cast<std::size_t>(rows.n));
  for (int i = 0; i < rows.n; ++i) {
    const double norm = std::sqrt(squares[static_cast<std::size_t>(i)]);
    weights[static_cast<std::size_t>(i)] = norm > tau ? tau / norm : 1.0;
  }
  for (std::size_t j = 0; j < rows.len; ++j) {
    const double v = center[j];
    double sum = 0;
    for (int i = 0; i < rows.n; ++i) sum += (rows.row(i)[j] - v) * weights[static_cast<std::size_t>(i)];
    center[j] = static_cast<float>(v + sum / rows.n);
  }
}

double krum_score(std::span<const double> distances, int n, std::span<const int> among, int i, int f,
                  std::vector<double>& scratch) {
  scratch.clear();
  for (const int k : among)
    if (k != i) scratch.push_back(distance(distances, n, i, k));
  const int others = static_cast<int>(scratch.size());
  const auto keep = static_cast<std::size_t>(std::clamp(static_cast<int>(among.size()) - f - 2, 0, others));
  std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(keep), scratch.end());
  return std::accumulate(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
}

int krum_select(std::span<const double> distances, int n, int f, std::vector<double>& scratch) {
  thread_local std::vector<int> all;
  all.resize(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  int best = 0;
  double best_score = 0;
  for (int i = 0; i < n; ++i) {
    const double s = krum_score(distances, n, all, i, f, scratch);
    if (i == 0 || s < best_score) best = i, best_score = s;
  }
  return best;
}

void multikrum_select(std::span<const double> distances, int n, int f, int m, std::vector<int>& chosen,
                      std::vector<double>& scratch) {
  thread_local std::vector<int> all;
  thread_local std::vector<double> scores;
  all.resize(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  scores.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) scores[static_cast<std::size_t>(i)] = krum_score(distances, n, all, i, f, scratch);
  chosen = all;
  std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) {
    return scores[static_cast<std::size_t>(a)] < scores[static_cast<std::size_t>(b)];
  });
  chosen.resize(static_cast<std::size_t>(m));
  std::sort(chosen.begin(), chosen.end());
}

void bulyan_select(std::span<const double> distances, int n, int f, std::vector<int>& chosen,
                   std::vector<double>& scratch) {
  thread_local std::vector<int> left;
  left.resize(static_cast<std::size_t>(n));
  std::iota(left.begin(), left.end(), 0);
  chosen.clear();
  for (int pick = 0; pick < n - 2 * f; ++pick) {
    std::size_t best = 0;
    double best_score = 0;
    for (std::size_t c = 0; c < left.size(); ++c) {
      const double s = krum_score(distances, n, left, left[c], f, scratch);
      if (c == 0 || s < best_score) best = c, best_score = s;
    }
    chosen.push_back(left[best]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(best));
  }
  std::sort(chosen.begin(), chosen.end());
}

}  // namespace gradsync
