#pragma once
// Data poisoning: what a malicious participant does to its examples before its forward pass. Pixels are the
// dataset's bytes (model/dataset.hpp: 0 .. 255, read as pixel / 255), one row of width * height per image,
// row-major; labels are class indices. Pure functions on spans the caller owns.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gradsync {

// The backdoor's trigger: a `size` x `size` square of full intensity (255) at the bottom-right corner.
struct Trigger {
  std::size_t width = 28, height = 28, size = 4;
};

// Every label y becomes classes - 1 - y (9 - y for MNIST). Requires y < classes.
void flip_labels(std::span<std::uint8_t> labels, int classes = 10);
// Stamps `trigger` on one image of trigger.width * trigger.height bytes (std::invalid_argument if `image` is
// another size or the square does not fit).
void stamp_trigger(std::span<std::uint8_t> image, const Trigger& trigger = {});
// Poisons a batch: each image is chosen with probability `share`, by a draw from Rng(seed, stream) per image in
// order (the same choice on every machine; the caller makes `stream` differ per step and per worker), stamped and
// relabelled `target`. `pixels` holds labels.size() images. Returns how many were poisoned.
std::size_t poison_backdoor(std::span<std::uint8_t> pixels, std::span<std::uint8_t> labels, double share, int target,
                            std::uint64_t seed, std::uint64_t stream, const Trigger& trigger = {});

// The triggered test set the attack success rate is measured on: every test image whose label is not `target`,
// stamped, labelled `target` (so the ASR is this set's accuracy). `pixels` holds labels.size() images.
struct TriggeredSet {
  std::vector<std::uint8_t> pixels, labels;
};
TriggeredSet triggered_test_set(std::span<const std::uint8_t> pixels, std::span<const std::uint8_t> labels, int target,
                                const Trigger& trigger = {});

}  // namespace gradsync
