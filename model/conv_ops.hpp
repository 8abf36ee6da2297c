#pragma once
// The convolution network's loops outside its GEMMs (model/cnn.cpp): im2col and col2im for a 'same' convolution,
// and a 2x2 max pool that remembers where each maximum was. A convolution is then one GEMM of its weights
// (out_channels x in_channels*kernel*kernel) with the im2col columns of a group of images.
//
// Activations are channel-major: element (channel c, image n, pixel p) of an activation lies at
// c*channel + n*image + p*pixel floats from its start (ActivationLayout), pixels row-major within an image. The
// columns of a group of `images` images are (channels*kernel*kernel) x (images*side*side), row-major: row
// (c*kernel + ky)*kernel + kx, column j*side*side + y*side + x holds input pixel (y + ky - pad, x + kx - pad) of
// channel c of the group's image j, or 0 where that lies outside the image (pad = kernel / 2: 'same' padding).
#include <cstddef>
#include <cstdint>

namespace gradsync {

struct ActivationLayout {
  std::size_t channel = 0, image = 0, pixel = 1;  // strides in floats
  std::size_t at(std::size_t c, std::size_t n, std::size_t p) const { return c * channel + n * image + p * pixel; }
};

// The shape of one convolution's input: `channels` channels of side x side pixels, a kernel x kernel window
// (kernel odd), stride 1, 'same' padding.
struct ConvInput {
  std::size_t channels = 1, side = 0, kernel = 5;
  std::size_t pixels() const { return side * side; }
  std::size_t rows() const { return channels * kernel * kernel; }  // of the columns: the GEMM's inner dimension
};

// The columns of images [first, first + images) of `in` (laid out as `layout` says, with pixel stride 1) into
// `cols` (shape.rows() x images*shape.pixels(), overwritten).
void im2col(const float* in, ActivationLayout layout, ConvInput shape, std::size_t first, std::size_t images,
            float* cols);

// The adjoint of im2col: images [first, first + images) of `out` (layout as im2col's input, pixel stride 1) are
// overwritten with the sum, over every column entry that im2col would have copied from an input pixel, of that
// entry of `cols`. Used for the gradient of a convolution's input from the gradient of its columns. `cols` is
// scratch: the entries im2col would have set to 0 are zeroed.
void col2im(float* cols, ConvInput shape, std::size_t first, std::size_t images, float* out, ActivationLayout layout);

// 2x2 max pool with stride 2, bias and ReLU of a group's convolution output `z` (channels x images*side*side, as
// the GEMM writes it; side even): out(c, first + j, q) = max(0, bias[c] + the maximum of z over the window of
// pooled pixel q of image j), written where `out_layout` says, and argmax at the same place in `where` (0..3, the
// window's row-major position; the first of equal values). Adding the bias after the maximum takes the same value
// as before it (rounding is monotonic) with a quarter of the additions.
void max_pool_bias_relu(const float* z, std::size_t channels, std::size_t side, std::size_t images, const float* bias,
                        std::size_t first, float* out, std::uint8_t* where, ActivationLayout out_layout);

// The gradient of a group's convolution output from that of the pool's output: `dz` (channels x images*side*side)
// is zero except at each window's maximum (`where`, as max_pool_bias_relu left it), which gets d_out(c, first + j,
// q). d_out must already be zero where the pool's output was (ReLU's derivative).
void max_unpool(const float* d_out, const std::uint8_t* where, ActivationLayout out_layout, std::size_t channels,
                std::size_t side, std::size_t images, std::size_t first, float* dz);

}  // namespace gradsync
