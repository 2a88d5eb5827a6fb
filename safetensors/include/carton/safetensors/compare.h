// Element-wise comparison of two tensors ("all close"), for model self-tests,
// and decoding of any real dtype to doubles, for printing.
//
// Floating dtypes are decoded to double (every value of every floating dtype
// is exact there) and compared as |actual - expected| <= atol + rtol *
// |expected|; C64 uses complex magnitudes. Integers and BOOL compare exactly.
//
// Element layout: little-endian, C order. Sub-byte dtypes (F4, F6_E2M3,
// F6_E3M2) form a little-endian bit stream: element i occupies bits
// [i*bits, (i+1)*bits) counting from bit 0 of byte 0, so F4 element 0 is the
// low nibble of byte 0 and F6 element 1 is bits 6..7 of byte 0 (its low bits)
// followed by bits 0..3 of byte 1. Within an element the sign is the top bit.
//
// Floating encodings: F16 (IEEE half), BF16, F32, F64; C64 = F32 real, F32
// imaginary; F8_E5M2 (bias 15, IEEE inf/NaN); F8_E4M3 (the "FN" variant:
// bias 7, no inf, S.1111.111 is NaN); F8_E8M0 (2^(e-127), 0xFF is NaN);
// F8_E4M3FNUZ (bias 8) and F8_E5M2FNUZ (bias 16): no inf, no -0, 0x80 is NaN;
// F6_E2M3 (bias 1), F6_E3M2 (bias 3), F4 = E2M1 (bias 1): no inf or NaN.
//
// The functions read the views' bytes without keeping them. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/safetensors/tensor.h"

namespace carton::safetensors {

struct CompareOptions {
  double rtol = 1e-5;      // relative tolerance, scaled by |expected|
  double atol = 1e-8;      // absolute tolerance
  bool equal_nan = false;  // NaN matches NaN (any payload, any sign)
};

struct CompareResult {
  bool equal = true;
  // Elements that differ; 0 when the dtypes or shapes differ (nothing was
  // compared element-wise).
  std::uint64_t mismatches = 0;
  std::uint64_t numel = 0;

  // The worst element, filled when mismatches > 0. For floats it is the one
  // with the largest |diff| - tolerance, where a NaN or infinity mismatch
  // counts as infinitely bad; ties go to the lowest index. For integers and
  // BOOL it is the first mismatch.
  std::vector<std::uint64_t> worst_index;  // one entry per dimension
  std::string actual;                      // value as text: "1.5", "nan", "18446744073709551615",
  std::string expected;                    // "(1, -2)" for C64 (real, imaginary)
  double abs_diff = 0;                     // |actual - expected| (complex magnitude for C64);
                                           // NaN when a NaN is involved, inf for an inf mismatch
  double tolerance = 0;                    // atol + rtol * |expected|; 0 for integers and BOOL

  // One line: "all 6 elements match", "dtype F32 vs expected F64",
  // "shape [2, 3] vs expected [3, 2]", or "3 of 6 elements differ; worst at
  // [1, 2]: 1.5 vs expected 1.25 (|diff| 0.25 > tol 1.25e-05)".
  std::string message;
};

// Compares `actual` against `expected` element by element. A dtype or shape
// difference is a normal answer (equal == false, with a message).
// Errors: kInvalidArgument when a view's byte size is not what its dtype and
// shape need (or numel overflows), or when rtol/atol is negative or NaN.
// Safe on untrusted tensors that pass those checks.
Result<CompareResult> AllClose(const TensorView& actual, const TensorView& expected,
                               const CompareOptions& options = {});

// Every element of `tensor` as a double, in C order. Floating dtypes are
// exact; BOOL gives 0/1 (the byte value); 64-bit integers beyond 2^53 round
// to nearest.
// Errors: kInvalidArgument for C64 (use AllClose) or when the byte size is
// not what the dtype and shape need.
Result<std::vector<double>> DecodeToDouble(const TensorView& tensor);

}  // namespace carton::safetensors
