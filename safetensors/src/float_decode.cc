#include "float_decode.h"

#include <bit>
#include <cmath>
#include <limits>

namespace carton::safetensors::internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// sign | exponent (exp_bits) | mantissa (man_bits), read as a finite number:
// exponent 0 is subnormal, every other exponent is normal. Callers handle the
// encodings their format reserves for inf and NaN before calling this.
double DecodeFinite(std::uint64_t bits, int exp_bits, int man_bits, int bias) {
  const std::uint64_t man = bits & ((std::uint64_t{1} << man_bits) - 1);
  const std::uint64_t exp = (bits >> man_bits) & ((std::uint64_t{1} << exp_bits) - 1);
  const bool negative = ((bits >> (man_bits + exp_bits)) & 1) != 0;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
  } else {
    const std::uint64_t significand = man | (std::uint64_t{1} << man_bits);
    v = std::ldexp(static_cast<double>(significand), static_cast<int>(exp) - bias - man_bits);
  }
  return negative ? -v : v;
}

// IEEE 754 layout: the all-ones exponent is inf (mantissa 0) or NaN.
double DecodeIeee(std::uint64_t bits, int exp_bits, int man_bits, int bias) {
  const std::uint64_t exp_mask = (std::uint64_t{1} << exp_bits) - 1;
  const std::uint64_t exp = (bits >> man_bits) & exp_mask;
  if (exp == exp_mask) {
    if ((bits & ((std::uint64_t{1} << man_bits) - 1)) != 0) return kNaN;
    return ((bits >> (man_bits + exp_bits)) & 1) != 0 ? -kInf : kInf;
  }
  return DecodeFinite(bits, exp_bits, man_bits, bias);
}

}  // namespace

std::uint64_t LoadElementBits(ByteView data, unsigned bits, std::uint64_t i) {
  switch (bits) {
    case 8:
      return std::to_integer<std::uint64_t>(data[i]);
    case 16:
      return LoadLE16(data.data() + i * 2);
    case 32:
      return LoadLE32(data.data() + i * 4);
    case 64:
      return LoadLE64(data.data() + i * 8);
    default:
      break;
  }
  // Sub-byte: an element spans at most two bytes because bits <= 8.
  const std::uint64_t first_bit = i * bits;
  const std::uint64_t byte = first_bit / 8;
  const unsigned shift = static_cast<unsigned>(first_bit % 8);
  std::uint64_t window = std::to_integer<std::uint64_t>(data[byte]);
  if (shift + bits > 8) window |= std::to_integer<std::uint64_t>(data[byte + 1]) << 8;
  return (window >> shift) & ((std::uint64_t{1} << bits) - 1);
}

double DecodeFloatBits(Dtype dtype, std::uint64_t bits) {
  switch (dtype) {
    case Dtype::kF64:
      return std::bit_cast<double>(bits);
    case Dtype::kF32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case Dtype::kBF16:
      return std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16));
    case Dtype::kF16:
      return DecodeIeee(bits, 5, 10, 15);
    case Dtype::kF8E5M2:
      return DecodeIeee(bits, 5, 2, 15);
    case Dtype::kF8E4M3:
      // No infinities; only S.1111.111 is NaN, so the largest value is 448.
      if ((bits & 0x7F) == 0x7F) return kNaN;
      return DecodeFinite(bits, 4, 3, 7);
    case Dtype::kF8E8M0:
      if (bits == 0xFF) return kNaN;
      return std::ldexp(1.0, static_cast<int>(bits) - 127);
    case Dtype::kF8E4M3Fnuz:
      // The negative-zero pattern is the only NaN.
      if (bits == 0x80) return kNaN;
      return DecodeFinite(bits, 4, 3, 8);
    case Dtype::kF8E5M2Fnuz:
      if (bits == 0x80) return kNaN;
      return DecodeFinite(bits, 5, 2, 16);
    case Dtype::kF6E2M3:
      return DecodeFinite(bits, 2, 3, 1);
    case Dtype::kF6E3M2:
      return DecodeFinite(bits, 3, 2, 3);
    case Dtype::kF4:
      return DecodeFinite(bits, 2, 1, 1);
    default:
      return kNaN;  // Not a real floating dtype; excluded by REQUIRES.
  }
}

double DecodeFloatElement(Dtype dtype, ByteView data, std::uint64_t i) {
  return DecodeFloatBits(dtype, LoadElementBits(data, DtypeBits(dtype), i));
}

std::complex<double> DecodeComplexElement(ByteView data, std::uint64_t i) {
  const std::uint64_t bits = LoadElementBits(data, 64, i);
  return {DecodeFloatBits(Dtype::kF32, bits & 0xFFFFFFFFu),
          DecodeFloatBits(Dtype::kF32, bits >> 32)};
}

}  // namespace carton::safetensors::internal
