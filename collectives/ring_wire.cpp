#include "collectives/ring_wire.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "collectives/bf16.hpp"

namespace gradsync {
namespace {

class NativeWire final : public RingWire {
 public:
  std::size_t element_bytes(Dtype type) const override { return dtype_size(type); }
  MPI_Datatype mpi_element(Dtype type) const override { return mpi_type(type); }
  void require_supported(Dtype) const override {}
  bool converts() const override { return false; }
  const void* pack(const std::byte* values, std::size_t, Dtype, std::byte*) const override { return values; }
  bool lands_in_place() const override { return true; }
  void add(std::byte* values, const std::byte* incoming, std::size_t n, Dtype type) const override {
    add_into(values, incoming, n, type);
  }
  void overwrite(std::byte* values, const std::byte* incoming, std::size_t n, Dtype type) const override {
    if (n > 0) std::memcpy(values, incoming, n * dtype_size(type));
  }
};

class Bf16Wire final : public RingWire {
 public:
  std::size_t element_bytes(Dtype) const override { return sizeof(std::uint16_t); }
  MPI_Datatype mpi_element(Dtype) const override { return MPI_UINT16_T; }
  void require_supported(Dtype type) const override {
    if (type != Dtype::f32)
      throw std::invalid_argument(fmt::format("ring-bf16 reduces float32 only, not {}", dtype_name(type)));
  }
  bool converts() const override { return true; }
  const void* pack(const std::byte* values, std::size_t n, Dtype, std::byte* outgoing) const override {
    to_bf16(floats(values), halves(outgoing), n);
    return outgoing;
  }
  bool lands_in_place() const override { return false; }
  void add(std::byte* values, const std::byte* incoming, std::size_t n, Dtype) const override {
    add_bf16_into(floats(values), halves(incoming), n);
  }
  // Finished segments are bf16 values already, so converting them again for the next hop is exact.
  void overwrite(std::byte* values, const std::byte* incoming, std::size_t n, Dtype) const override {
    from_bf16(halves(incoming), floats(values), n);
  }
  void seal(std::byte* values, std::size_t n, Dtype) const override { round_to_bf16(floats(values), n); }

 private:
  static float* floats(std::byte* p) { return reinterpret_cast<float*>(p); }
  static const float* floats(const std::byte* p) { return reinterpret_cast<const float*>(p); }
  static std::uint16_t* halves(std::byte* p) { return reinterpret_cast<std::uint16_t*>(p); }
  static const std::uint16_t* halves(const std::byte* p) { return reinterpret_cast<const std::uint16_t*>(p); }
};

}  // namespace

const RingWire& native_wire() {
  static const NativeWire wire;
  return wire;
}

const RingWire& bf16_wire() {
  static const Bf16Wire wire;
  return wire;
}

}  // namespace gradsync
