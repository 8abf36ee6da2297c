#pragma once
// The CNN's loss and gradient computed directly, in double precision, as a textbook writes them: each convolution a
// sum over its 5x5 window with zero padding (no im2col, no GEMM), ReLU, then the 2x2 max pool (the first of equal
// values), then the dense layers and the softmax cross-entropy, and the backward pass through the same loops. What
// tests/test_cnn.cpp holds model/cnn.cpp to.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "model/cnn.hpp"

namespace gradsync::test {

struct CnnReference {
  double loss = 0;
  std::vector<double> grads;  // the model's flat layout
};

inline CnnReference cnn_reference(const Cnn& model, std::span<const float> params, const Batch& batch) {
  constexpr std::size_t kK = 5, kPad = 2;
  const CnnShape& s = model.shape();
  const std::vector<LayerShape>& layers = model.layers();
  const std::size_t n = batch.size;
  CnnReference out;
  out.grads.assign(params.size(), 0.0);
  const auto w = [&](std::size_t l, std::size_t o, std::size_t i) {
    return double(params[layers[l].offset + o * layers[l].inputs + i]);
  };
  const auto b = [&](std::size_t l, std::size_t o) { return double(params[layers[l].bias_offset() + o]); };
  const auto dw = [&](std::size_t l, std::size_t o, std::size_t i) -> double& {
    return out.grads[layers[l].offset + o * layers[l].inputs + i];
  };
  const auto db = [&](std::size_t l, std::size_t o) -> double& { return out.grads[layers[l].bias_offset() + o]; };

  // Layer l's 'same' convolution of `in` (n x cin x side x side): n x cout x side x side, and its adjoints.
  const auto conv = [&](const std::vector<double>& in, std::size_t cin, std::size_t side, std::size_t l) {
    const std::size_t cout = layers[l].outputs;
    std::vector<double> z(n * cout * side * side);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t co = 0; co < cout; ++co)
        for (std::size_t y = 0; y < side; ++y)
          for (std::size_t x = 0; x < side; ++x) {
            double sum = b(l, co);
            for (std::size_t ci = 0; ci < cin; ++ci)
              for (std::size_t ky = 0; ky < kK; ++ky)
                for (std::size_t kx = 0; kx < kK; ++kx) {
                  const std::size_t yy = y + ky, xx = x + kx;  // + kPad, as unsigned
                  if (yy < kPad || xx < kPad || yy - kPad >= side || xx - kPad >= side) continue;
                  sum += w(l, co, (ci * kK + ky) * kK + kx) * in[((j * cin + ci) * side + yy - kPad) * side + xx - kPad];
                }
            z[((j * cout + co) * side + y) * side + x] = sum;
          }
    return z;
  };
  const auto conv_backward = [&](const std::vector<double>& in, std::size_t cin, std::size_t side, std::size_t l,
                                 const std::vector<double>& dz, std::vector<double>* d_in) {
    const std::size_t cout = layers[l].outputs;
    if (d_in) d_in->assign(n * cin * side * side, 0.0);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t co = 0; co < cout; ++co)
        for (std::size_t y = 0; y < side; ++y)
          for (std::size_t x = 0; x < side; ++x) {
            const double g = dz[((j * cout + co) * side + y) * side + x];
            db(l, co) += g;
            for (std::size_t ci = 0; ci < cin; ++ci)
              for (std::size_t ky = 0; ky < kK; ++ky)
                for (std::size_t kx = 0; kx < kK; ++kx) {
                  const std::size_t yy = y + ky, xx = x + kx;
                  if (yy < kPad || xx < kPad || yy - kPad >= side || xx - kPad >= side) continue;
                  const std::size_t at = ((j * cin + ci) * side + yy - kPad) * side + xx - kPad;
                  dw(l, co, (ci * kK + ky) * kK + kx) += g * in[at];
                  if (d_in) (*d_in)[at] += g * w(l, co, (ci * kK + ky) * kK + kx);
                }
          }
  };
  // ReLU, then the 2x2 max pool of z (n x c x side x side); `from` is where each output's maximum was.
  const auto pool = [&](const std::vector<double>& z, std::size_t c, std::size_t side, std::vector<std::size_t>& from) {
    const std::size_t half = side / 2;
    std::vector<double> p(n * c * half * half);
    from.resize(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const std::size_t px = i % half, py = i / half % half, plane = i / (half * half);
      double best = -1;
      for (std::size_t dy = 0; dy < 2; ++dy)
        for (std::size_t dx = 0; dx < 2; ++dx) {
          const std::size_t at = (plane * side + 2 * py + dy) * side + 2 * px + dx;
          if (std::max(z[at], 0.0) > best) {
            best = std::max(z[at], 0.0);
            from[i] = at;
          }
        }
      p[i] = best;
    }
    return p;
  };
  // The gradient of z from the pool's: at each maximum, where z > 0 (ReLU).
  const auto unpool = [&](const std::vector<double>& dp, const std::vector<std::size_t>& from,
                          const std::vector<double>& z) {
    std::vector<double> dz(z.size(), 0.0);
    for (std::size_t i = 0; i < dp.size(); ++i)
      if (z[from[i]] > 0) dz[from[i]] += dp[i];
    return dz;
  };

  const std::size_t side = s.side, half = side / 2, quarter = side / 4;
  std::vector<double> x(n * side * side);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = batch.rows[i];
  std::vector<std::size_t> from1, from2;
  const std::vector<double> z1 = conv(x, 1, side, 0);
  const std::vector<double> p1 = pool(z1, s.channels1, side, from1);
  const std::vector<double> z2 = conv(p1, s.channels1, half, 1);
  const std::vector<double> p2 = pool(z2, s.channels2, half, from2);  // n x (channel, y, x): the dense input
  const std::size_t features = s.channels2 * quarter * quarter;
  std::vector<double> h(n * s.hidden), logits(n * s.classes);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t o = 0; o < s.hidden; ++o) {
      double sum = b(2, o);
      for (std::size_t f = 0; f < features; ++f) sum += w(2, o, f) * p2[j * features + f];
      h[j * s.hidden + o] = std::max(sum, 0.0);
    }
    for (std::size_t o = 0; o < s.classes; ++o) {
      double sum = b(3, o);
      for (std::size_t i = 0; i < s.hidden; ++i) sum += w(3, o, i) * h[j * s.hidden + i];
      logits[j * s.classes + o] = sum;
    }
  }
  // Softmax cross-entropy, and dLoss/dlogits = (p - onehot(y)) / n.
  std::vector<double> d_logits(logits.size());
  for (std::size_t j = 0; j < n; ++j) {
    const double* l = &logits[j * s.classes];
    const double top = *std::max_element(l, l + s.classes);
    double sum = 0;
    for (std::size_t o = 0; o < s.classes; ++o) sum += std::exp(l[o] - top);
    for (std::size_t o = 0; o < s.classes; ++o) {
      const double p = std::exp(l[o] - top) / sum;
      d_logits[j * s.classes + o] = (p - (o == batch.labels[j] ? 1.0 : 0.0)) / static_cast<double>(n);
    }
    out.loss -= (l[batch.labels[j]] - top - std::log(sum)) / static_cast<double>(n);
  }
  // The dense layers backwards.
  std::vector<double> dh(h.size(), 0.0), dp2(p2.size(), 0.0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t o = 0; o < s.classes; ++o) {
      const double g = d_logits[j * s.classes + o];
      db(3, o) += g;
      for (std::size_t i = 0; i < s.hidden; ++i) {
        dw(3, o, i) += g * h[j * s.hidden + i];
        dh[j * s.hidden + i] += g * w(3, o, i);
      }
    }
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t o = 0; o < s.hidden; ++o) {
      const double g = h[j * s.hidden + o] > 0 ? dh[j * s.hidden + o] : 0.0;
      db(2, o) += g;
      for (std::size_t f = 0; f < features; ++f) {
        dw(2, o, f) += g * p2[j * features + f];
        dp2[j * features + f] += g * w(2, o, f);
      }
    }
  std::vector<double> dp1;
  conv_backward(p1, s.channels1, half, 1, unpool(dp2, from2, z2), &dp1);
  conv_backward(x, 1, side, 0, unpool(dp1, from1, z1), nullptr);
  return out;
}

}  // namespace gradsync::test
