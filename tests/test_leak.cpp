// The leak of a dense layer's gradient (privacy/leak.hpp, issue 56): a batch-1 gradient of the MLP gives its image
// back exactly, and secure aggregation's masked vector, read as an eavesdropper reads it, gives nothing back.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "collectives/comm.hpp"
#include "model/mlp.hpp"
#include "model/rng.hpp"
#include "model/synthetic.hpp"
#include "privacy/leak.hpp"
#include "privacy/secure_aggregator.hpp"
#include "test_support.hpp"

namespace gradsync {
namespace {

// An image-like example per index: blobs of 784 pixels in [0, 1], as MNIST's rows after the gather.
struct LeakSetup {
  Mlp model{{784, 64, 10}};
  Dataset data = make_blobs(64, 784, 10, 0.3f, 23);
  std::vector<float> params = std::vector<float>(model.parameter_count());
  std::vector<float> grads = std::vector<float>(model.parameter_count());
  Workspace ws{model, 8};
  Batch batch{8, 784};
  LeakSetup() { model.init(params, 5); }
  void gradient_of(std::span<const std::uint32_t> indices) {
    gather_batch(data, indices, batch, true);
    model.loss_and_gradient(params, batch, grads, ws);
  }
  std::span<const float> rows() const { return std::span(batch.rows).first(batch.size * 784); }
};

}  // namespace

TEST_CASE("leak: a batch-1 MLP gradient gives its image back exactly from every active row") {
  LeakSetup s;
  for (const std::uint32_t example : {0u, 7u, 41u}) {
    CAPTURE(example);
    const std::array<std::uint32_t, 1> one{example};
    s.gradient_of(one);
    const std::vector<Reconstruction> recs = reconstruct_inputs(s.grads, s.model.layers()[0], 1e-6);
    // At He initialization about half of the hidden units fire for an image.
    REQUIRE(recs.size() > 8);
    for (const Reconstruction& r : recs) {
      float worst = 0;
      for (std::size_t j = 0; j < 784; ++j) worst = std::max(worst, std::fabs(r.x[j] - s.batch.rows[j]));
      CAPTURE(r.row);
      CHECK(worst < 1e-4f);
    }
    const LeakScore score = score_reconstructions(recs, s.rows(), 784);
    CHECK(score.recovered == 1);
    CHECK(score.best_psnr[0] > 80);
  }
}

TEST_CASE("leak: secure aggregation's masked vector gives nothing back; the same gradient unmasked does") {
  const Comm world = Comm::world();
  if (test::skip_unless(world.size() >= 2, "needs at least 2 ranks: one rank's vector carries no pair mask")) return;
  LeakSetup s;
  const std::array<std::uint32_t, 1> one{static_cast<std::uint32_t>(world.rank())};
  s.gradient_of(one);
  const FixedPoint fixed(1.0, world.size());
  std::array<unsigned char, 32> seed{};
  for (std::size_t i = 0; i < seed.size(); ++i)
    seed[i] = static_cast<unsigned char>(splitmix64(static_cast<std::uint64_t>(world.rank()) * 97 + i));
  SecureAggregator sa(world, PairKeys::agree(world, std::span<const unsigned char, 32>(seed)), fixed, s.grads.size());
  const std::span<std::uint32_t> masked = sa.encode(s.grads, 1);
  std::vector<float> read(s.grads.size());

  // The control: the quantized, unmasked codes read back leak the image (fixed point loses little).
  std::vector<std::uint32_t> codes(s.grads.size());
  fixed.quantize(s.grads, codes);
  fixed.dequantize(codes, read);
  const LeakScore plain = score_reconstructions(reconstruct_inputs(read, s.model.layers()[0], 1e-6), s.rows(), 784);
  CHECK(plain.recovered == 1);

  // The eavesdropper knows the public scale and reads the masked words as codes.
  fixed.dequantize(masked.first(s.grads.size()), read);
  const std::vector<Reconstruction> recs = reconstruct_inputs(read, s.model.layers()[0], 1e-6);
  CHECK(recs.size() > 32);  // every bias word is noise, so nearly every row looks active
  const LeakScore score = score_reconstructions(recs, s.rows(), 784);
  CHECK(score.recovered == 0);
  // Noise level: a uniform random guess clamped to [0, 1] scores about 5 dB against a digit, a blank image about
  // 10 dB; no row comes near the 20 dB of a recognisable digit.
  CHECK(score.best_psnr_mean < 12);
  sa.allreduce();  // every rank completes the round
  std::vector<float> sum(s.grads.size());
  sa.decode(sum);
}

}  // namespace gradsync
