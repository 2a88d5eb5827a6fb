// Reading single elements out of a tensor's bytes, and decoding every
// floating dtype to double.
//
// Elements are little-endian. Sub-byte dtypes (F4, F6_*) are a little-endian
// bit stream: element i occupies bits [i*bits, (i+1)*bits) counting from bit 0
// of byte 0, and within an element the sign is the highest bit. Every value of
// every floating dtype is exactly representable as a double.
//
// Pure functions on borrowed bytes; safe to call from any thread.
#pragma once

#include <complex>
#include <cstdint>

#include "carton/common/bytes.h"
#include "carton/safetensors/dtype.h"

namespace carton::safetensors::internal {

// The raw bits of element i, zero-extended.
// REQUIRES: data holds at least i + 1 elements of `bits` bits, and bits is
// 4, 6, 8, 16, 32 or 64.
std::uint64_t LoadElementBits(ByteView data, unsigned bits, std::uint64_t i);

// The value of one element given its raw bits (as LoadElementBits returns).
// REQUIRES: IsFloat(dtype) and dtype != Dtype::kC64.
double DecodeFloatBits(Dtype dtype, std::uint64_t bits);

// Element i of a real floating tensor.
// REQUIRES: as for LoadElementBits and DecodeFloatBits.
double DecodeFloatElement(Dtype dtype, ByteView data, std::uint64_t i);

// Element i of a C64 tensor (an F32 real part followed by an F32 imaginary
// part). REQUIRES: data holds at least i + 1 elements.
std::complex<double> DecodeComplexElement(ByteView data, std::uint64_t i);

}  // namespace carton::safetensors::internal
