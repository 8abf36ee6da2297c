#pragma once
// What the CNN's gradient leaks: its first dense layer reads the second pool's output (channels2 x side/4 x side/4,
// channel-major), so dW_i / db_i of that layer is an image's pooled feature maps, not its pixels. The leak tool
// scores those reconstructions against the true features, computed here by a plain reference forward pass (double
// sums, no im2col) of the two convolutions of model/cnn.hpp: 5x5 cross-correlation with zero padding 2, 2x2 max
// pool, bias, ReLU.
#include <cstddef>
#include <span>
#include <vector>

#include "model/cnn.hpp"

namespace gradsync::bench {

// The first dense layer's input for each of `count` images (rows of `pixels`, side x side floats each), count x
// (channels2 (side/4)^2) floats, row-major. `params` are `cnn`'s.
std::vector<float> cnn_dense_inputs(const Cnn& cnn, std::span<const float> params, std::span<const float> pixels,
                                    std::size_t count);

}  // namespace gradsync::bench
