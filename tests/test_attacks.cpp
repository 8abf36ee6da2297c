// The attacks (attacks/): each produces what its definition says on a known input, the ALIE z and the normal
// quantile behind it against independent values (Python's statistics.NormalDist, Wichura's AS241), the colluders'
// moments over a communicator of the malicious ranks, and the spec parser's refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "attacks/attack_spec.hpp"
#include "attacks/colluders.hpp"
#include "attacks/data_poisoning.hpp"
#include "attacks/gradient_attacks.hpp"
#include "attacks/normal_quantile.hpp"
#include "test_support.hpp"

using namespace gradsync;
using test::check_mentions;

TEST_CASE("attack specs parse with their defaults, and bad ones are refused naming the text") {
  CHECK(parse_attack("sign-flip").scale == 1.0);
  CHECK(parse_attack("sign-flip:4").scale == 4.0);
  CHECK(parse_attack("ipm").scale == 0.1);
  CHECK(parse_attack("alie").scale == 0.0);  // z from n and f
  const AttackSpec b = parse_attack("backdoor:0.3,7");
  CHECK(b.kind == AttackKind::backdoor);
  CHECK(b.scale == 0.3);
  CHECK(b.target_class == 7);
  CHECK(attack_target(AttackKind::label_flip) == AttackTarget::data);
  CHECK(attack_target(AttackKind::gaussian) == AttackTarget::gradient);
  CHECK(attack_colludes(AttackKind::alie));
  CHECK(!attack_colludes(AttackKind::sign_flip));
  const auto refused = [](const std::string& text, std::initializer_list<std::string> parts) {
    std::string message;
    try {
      parse_attack(text);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    INFO(text);
    check_mentions(message, parts);
  };
  refused("signflip", {"signflip", "sign-flip:[S]", "ipm:[EPS]"});
  refused("sign-flip:x", {"sign-flip:x", "'x'"});
  refused("gaussian:-1", {"gaussian:-1", "'-1'"});
  refused("label-flip:2", {"label-flip:2", "no parameter"});
  refused("backdoor:1.5", {"backdoor:1.5", "at most 1"});
  refused("backdoor:0.5,12", {"backdoor:0.5,12", "'12'"});
  refused("ipm:1,2", {"ipm:1,2", "at most 1"});
}

TEST_CASE("the normal quantile matches AS241's values and inverts the CDF") {
  // statistics.NormalDist().inv_cdf (Python 3.11, AS241), printed with repr.
  const std::pair<double, double> known[] = {
      {0.72, 0.5828415072712162},     {0.975, 1.9599639845400536}, {0.5, 0.0},
      {0.02425, -1.9729610513118845}, {1e-10, -6.361340902404056}, {0.3, -0.5244005127080407},
      {0.999999, 4.753424308817089}};
  for (const auto& [p, z] : known) {
    INFO("p=", p);
    CHECK(std::abs(normal_quantile(p) - z) <= 1e-9 * std::max(1.0, std::abs(z)));
  }
  for (double p = 0.001; p < 1; p += 0.001) {
    INFO("p=", p);
    CHECK(std::abs(normal_cdf(normal_quantile(p)) - p) <= 1e-14);
    CHECK(std::abs(normal_quantile(p) + normal_quantile(1 - p)) <= 1e-9);
  }
  CHECK_THROWS_AS(normal_quantile(0.0), std::invalid_argument);
  CHECK_THROWS_AS(normal_quantile(1.0), std::invalid_argument);
}

TEST_CASE("ALIE's z is Phi^-1((n - s) / n) with s = floor(n/2 + 1) - f") {
  // n = 50, f = 12: s = 26 - 12 = 14, (50 - 14) / 50 = 0.72.
  CHECK(std::abs(alie_z(50, 12) - 0.5828415072712162) <= 1e-12);
  // n = 8, f = 2: s = 5 - 2 = 3, 5 / 8.
  CHECK(std::abs(alie_z(8, 2) - 0.31863936396437514) <= 1e-12);
  // n = 2, f = 0: s = 2 leaves no honest worker to sway.
  std::string message;
  try {
    alie_z(2, 0);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  check_mentions(message, {"n = 2", "f = 0", "= 2"});
}

TEST_CASE("sign-flip sends exactly -s times the honest gradient, ipm -eps times the mean, alie mean - z std") {
  const std::vector<float> honest = {0.5f, -1.25f, 3.0f, 0.0f, 1e-20f, -7.0f};
  std::vector<float> out(honest.size());
  sign_flip(honest, 4.0f, out);
  for (std::size_t j = 0; j < honest.size(); ++j) CHECK(out[j] == -4.0f * honest[j]);
  std::vector<float> in_place = honest;
  sign_flip(in_place, 0.3f, in_place);
  for (std::size_t j = 0; j < honest.size(); ++j) CHECK(in_place[j] == -0.3f * honest[j]);
  ipm(honest, 0.1f, out);
  for (std::size_t j = 0; j < honest.size(); ++j) CHECK(out[j] == -0.1f * honest[j]);
  const std::vector<float> mean = {0.5f, -2.0f, 2.0f}, sd = {1.0f, 1.0f, 0.0f};
  std::vector<float> a(3);
  alie(mean, sd, 1.5, a);
  CHECK(a == std::vector<float>{-1.0f, -3.5f, 2.0f});
}

TEST_CASE("the colluders' moments and ALIE from a given set of three gradients") {
  const Comm world = Comm::world();
  SKIP_UNLESS(world.size() >= 3, "three colluders need three ranks");
  const std::vector<std::vector<float>> g = {
      {0.5f, -1.0f, 2.0f, 0.0f}, {1.5f, -3.0f, 2.0f, 0.25f}, {-0.5f, -2.0f, 2.0f, 1.0f}};
  const Comm colluders = world.split(world.rank() < 3 ? 0 : MPI_UNDEFINED, world.rank());
  if (!colluders.valid()) return;
  ColluderMoments moments(colluders);
  moments.run(g[static_cast<std::size_t>(colluders.rank())]);
  // statistics.mean and statistics.stdev (divided by m - 1) of the columns.
  const double mean[] = {0.5, -2.0, 2.0, 0.4166666666666667}, sd[] = {1.0, 1.0, 0.0, 0.5204164998665332};
  std::vector<float> out(4);
  const double z = alie_z(8, 2);
  alie(moments.mean(), moments.std(), z, out);
  for (std::size_t j = 0; j < 4; ++j) {
    INFO("j=", j);
    CHECK(std::abs(moments.mean()[j] - mean[j]) <= 1e-7);
    CHECK(std::abs(moments.std()[j] - sd[j]) <= 1e-7);
    CHECK(std::abs(out[j] - (mean[j] - z * sd[j])) <= 1e-6);
  }
}

TEST_CASE("gaussian noise has the scale asked for and is fixed by its seed and stream") {
  std::vector<float> a(100001), b(a.size()), c(a.size());
  gaussian_noise(3.0f, 42, 7, a);
  gaussian_noise(3.0f, 42, 7, b);
  gaussian_noise(3.0f, 42, 8, c);
  CHECK(a == b);
  CHECK(a != c);
  double sum = 0, squares = 0;
  for (const float x : a) sum += x, squares += static_cast<double>(x) * x;
  const double n = static_cast<double>(a.size()), mean = sum / n, sd = std::sqrt(squares / n - mean * mean);
  CHECK(std::abs(mean) < 0.03);  // 3 / sqrt(n) ~ 0.0095
  CHECK(std::abs(sd - 3.0) < 0.03);
  std::size_t beyond = 0;  // P(|N(0,1)| > 2) = 0.0455
  for (const float x : a) beyond += std::abs(x) > 6.0f;
  CHECK(std::abs(static_cast<double>(beyond) / n - 0.0455) < 0.004);
}

TEST_CASE("label-flip maps y to 9 - y; the backdoor stamps a 4x4 white square at the bottom-right") {
  std::vector<std::uint8_t> labels(10);
  std::iota(labels.begin(), labels.end(), std::uint8_t{0});
  flip_labels(labels);
  for (int y = 0; y < 10; ++y) CHECK(labels[static_cast<std::size_t>(y)] == 9 - y);

  std::vector<std::uint8_t> image(28 * 28, 17);
  stamp_trigger(image);
  for (std::size_t r = 0; r < 28; ++r)
    for (std::size_t col = 0; col < 28; ++col) {
      INFO("row ", r, " col ", col);
      CHECK(image[r * 28 + col] == (r >= 24 && col >= 24 ? 255 : 17));
    }
  CHECK_THROWS_AS(stamp_trigger(std::span<std::uint8_t>(image).first(100)), std::invalid_argument);

  // A share of a batch: about `share` of the images, each stamped and relabelled, the rest untouched.
  const std::size_t images = 2000;
  std::vector<std::uint8_t> pixels(images * 784, 0), y(images);
  for (std::size_t i = 0; i < images; ++i) y[i] = static_cast<std::uint8_t>(i % 10);
  const std::vector<std::uint8_t> y0 = y;
  const std::size_t poisoned = poison_backdoor(pixels, y, 0.25, 3, 5, 1);
  CHECK(std::abs(static_cast<double>(poisoned) / images - 0.25) < 0.03);
  std::size_t stamped = 0;
  for (std::size_t i = 0; i < images; ++i) {
    const bool s = pixels[i * 784 + 783] == 255;
    stamped += s;
    CHECK(y[i] == (s ? 3 : y0[i]));
    CHECK(std::accumulate(pixels.begin() + static_cast<std::ptrdiff_t>(i * 784),
                          pixels.begin() + static_cast<std::ptrdiff_t>((i + 1) * 784), 0) == (s ? 16 * 255 : 0));
  }
  CHECK(stamped == poisoned);
  std::vector<std::uint8_t> pixels2(images * 784, 0), y2 = y0;
  CHECK(poison_backdoor(pixels2, y2, 0.25, 3, 5, 1) == poisoned);  // the same seed and stream, the same choice
  CHECK(y2 == y);
  CHECK(poison_backdoor(pixels2, y2, 1.0, 3, 5, 2) == images);

  // The triggered test set: every image not of the target class, stamped, labelled the target.
  std::vector<std::uint8_t> test_pixels(30 * 784, 9), test_labels(30);
  for (std::size_t i = 0; i < 30; ++i) test_labels[i] = static_cast<std::uint8_t>(i % 10);
  const TriggeredSet set = triggered_test_set(test_pixels, test_labels, 3);
  CHECK(set.labels.size() == 27);
  CHECK(std::all_of(set.labels.begin(), set.labels.end(), [](std::uint8_t l) { return l == 3; }));
  CHECK(set.pixels.size() == 27 * 784);
  for (std::size_t i = 0; i < 27; ++i) {
    CHECK(set.pixels[i * 784 + 24 * 28 + 24] == 255);
    CHECK(set.pixels[i * 784 + 23 * 28 + 23] == 9);
  }
}
