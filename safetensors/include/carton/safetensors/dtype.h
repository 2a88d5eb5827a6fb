// Element types of safetensors tensors, with their names and bit widths.
//
// Names are the header's spelling ("F32", "BF16", "F8_E4M3", ...). Sub-byte
// types (F4: 4 bits, F6_E2M3/F6_E3M2: 6 bits) pack elements without padding;
// a tensor of them is valid only when numel * bits is a multiple of 8.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace carton::safetensors {

enum class Dtype : std::uint8_t {
  kBool,
  kF4,
  kF6E2M3,
  kF6E3M2,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kF8E8M0,
  kF8E4M3Fnuz,
  kF8E5M2Fnuz,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kC64,
  kF64,
  kI64,
  kU64,
};

// Every dtype, in enum order.
std::span<const Dtype> AllDtypes();

// The header spelling, e.g. "BF16".
std::string_view DtypeName(Dtype dtype);

// Parses a header spelling (exact, case-sensitive). nullopt if unknown.
std::optional<Dtype> ParseDtype(std::string_view name);

// Bits per element: 1 byte for BOOL (8), 4 for F4, 6 for F6_*, 64 for C64...
unsigned DtypeBits(Dtype dtype);

// True for floating-point types (including F8/F6/F4 and C64).
bool IsFloat(Dtype dtype);

// Byte size of `numel` elements. nullopt when numel * bits overflows 64 bits
// or is not a whole number of bytes (sub-byte types).
std::optional<std::uint64_t> ByteSize(Dtype dtype, std::uint64_t numel);

}  // namespace carton::safetensors
