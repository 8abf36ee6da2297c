#include "attacks/data_poisoning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "model/rng.hpp"

namespace gradsync {
namespace {

std::size_t image_bytes(const Trigger& t) { return t.width * t.height; }

}  // namespace

void flip_labels(std::span<std::uint8_t> labels, int classes) {
  for (std::uint8_t& y : labels) y = static_cast<std::uint8_t>(classes - 1 - y);
}

void stamp_trigger(std::span<std::uint8_t> image, const Trigger& t) {
  if (image.size() != image_bytes(t) || t.size > t.width || t.size > t.height)
    throw std::invalid_argument(fmt::format("backdoor: a {0}x{0} trigger on an image of {1} bytes, not {2}x{3}", t.size,
                                            image.size(), t.width, t.height));
  for (std::size_t row = t.height - t.size; row < t.height; ++row)
    std::fill_n(image.begin() + static_cast<std::ptrdiff_t>(row * t.width + t.width - t.size), t.size, std::uint8_t{255});
}

std::size_t poison_backdoor(std::span<std::uint8_t> pixels, std::span<std::uint8_t> labels, double share, int target,
                            std::uint64_t seed, std::uint64_t stream, const Trigger& t) {
  const std::size_t bytes = image_bytes(t);
  if (pixels.size() != labels.size() * bytes)
    throw std::invalid_argument(
        fmt::format("backdoor: {} pixel bytes for {} images of {} bytes", pixels.size(), labels.size(), bytes));
  Rng rng(seed, stream);
  std::size_t poisoned = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (rng.uniform() >= share) continue;
    stamp_trigger(pixels.subspan(i * bytes, bytes), t);
    labels[i] = static_cast<std::uint8_t>(target);
    ++poisoned;
  }
  return poisoned;
}

TriggeredSet triggered_test_set(std::span<const std::uint8_t> pixels, std::span<const std::uint8_t> labels, int target,
                                const Trigger& t) {
  const std::size_t bytes = image_bytes(t);
  if (pixels.size() != labels.size() * bytes)
    throw std::invalid_argument(
        fmt::format("backdoor test set: {} pixel bytes for {} images of {} bytes", pixels.size(), labels.size(), bytes));
  TriggeredSet set;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == target) continue;
    const std::size_t at = set.pixels.size();
    set.pixels.insert(set.pixels.end(), pixels.begin() + static_cast<std::ptrdiff_t>(i * bytes),
                      pixels.begin() + static_cast<std::ptrdiff_t>((i + 1) * bytes));
    stamp_trigger(std::span<std::uint8_t>(set.pixels).subspan(at, bytes), t);
    set.labels.push_back(static_cast<std::uint8_t>(target));
  }
  return set;
}

}  // namespace gradsync
