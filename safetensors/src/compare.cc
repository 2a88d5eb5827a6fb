#include "carton/safetensors/compare.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <string_view>

#include "float_decode.h"

namespace carton::safetensors {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Describe(std::string_view role, const TensorView& t) {
  std::string s(role);
  s += role.empty() ? "tensor" : " tensor";
  if (!t.name.empty()) {
    s += " \"";
    s += t.name;
    s += "\"";
  }
  return s;
}

// kInvalidArgument unless the view's bytes are exactly what dtype x shape
// needs.
Status CheckByteSize(std::string_view role, const TensorView& t) {
  const std::string what =
      Describe(role, t) + ": " + std::string(DtypeName(t.dtype)) + " " + ShapeToString(t.shape);
  const auto numel = CheckedNumel(t.shape);
  std::uint64_t bits;
  if (!numel || !CheckedMul(*numel, DtypeBits(t.dtype), &bits)) {
    return InvalidArgument(what + " has too many elements to address");
  }
  if (bits % 8 != 0) {
    return InvalidArgument(what + " is " + std::to_string(bits) +
                           " bits, not a whole number of bytes");
  }
  if (bits / 8 != t.data.size()) {
    return InvalidArgument(what + " needs " + std::to_string(bits / 8) +
                           " bytes but the view has " + std::to_string(t.data.size()));
  }
  return Status::Ok();
}

bool IsSigned(Dtype dtype) {
  return dtype == Dtype::kI8 || dtype == Dtype::kI16 || dtype == Dtype::kI32 ||
         dtype == Dtype::kI64;
}

std::int64_t SignExtend(std::uint64_t bits, unsigned width) {
  const unsigned unused = 64 - width;
  return static_cast<std::int64_t>(bits << unused) >> unused;
}

// Shortest text that reads back as the same value of type T.
template <typename T>
std::string ShortestText(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// Values narrower than F64 print at float precision so that an F32 0.1 reads
// "0.1" rather than its exact double expansion.
std::string ValueText(Dtype dtype, double v) {
  if (dtype == Dtype::kF64) return ShortestText(v);
  return ShortestText(static_cast<float>(v));
}

// Differences and tolerances are for a reader, so six digits suffice.
std::string ShortText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::vector<std::uint64_t> Unravel(std::span<const std::uint64_t> shape, std::uint64_t flat) {
  std::vector<std::uint64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

struct Verdict {
  bool match = true;
  double diff = 0;
  double tol = 0;
  double score = 0;  // how far past the tolerance; inf for NaN/inf mismatches
  bool both_nan = false;
};

Verdict CompareReal(double a, double b, const CompareOptions& o) {
  Verdict v;
  v.tol = o.atol + o.rtol * std::fabs(b);
  if (std::isnan(a) || std::isnan(b)) {
    v.both_nan = std::isnan(a) && std::isnan(b);
    v.match = v.both_nan && o.equal_nan;
    v.diff = kNaN;
    v.score = kInf;
  } else if (std::isinf(a) || std::isinf(b)) {
    v.match = a == b;
    v.diff = v.match ? 0 : kInf;
    v.score = kInf;
  } else {
    v.diff = std::fabs(a - b);
    v.match = v.diff <= v.tol;
    v.score = v.diff - v.tol;
  }
  return v;
}

Verdict CompareComplex(std::complex<double> a, std::complex<double> b, const CompareOptions& o) {
  auto has_nan = [](std::complex<double> z) {
    return std::isnan(z.real()) || std::isnan(z.imag());
  };
  auto has_inf = [](std::complex<double> z) {
    return std::isinf(z.real()) || std::isinf(z.imag());
  };
  Verdict v;
  v.tol = o.atol + o.rtol * std::abs(b);
  if (has_nan(a) || has_nan(b)) {
    v.both_nan = has_nan(a) && has_nan(b);
    v.match = v.both_nan && o.equal_nan;
    v.diff = kNaN;
    v.score = kInf;
  } else if (has_inf(a) || has_inf(b)) {
    v.match = a == b;
    v.diff = v.match ? 0 : kInf;
    v.score = kInf;
  } else {
    v.diff = std::abs(a - b);
    v.match = v.diff <= v.tol;
    v.score = v.diff - v.tol;
  }
  return v;
}

std::string ComplexText(std::complex<double> z) {
  return "(" + ValueText(Dtype::kF32, z.real()) + ", " + ValueText(Dtype::kF32, z.imag()) + ")";
}

// Counts mismatches into r; returns the worst one's Verdict and sets *worst to
// its flat index. `fn(i)` returns the Verdict for element i.
template <typename Fn>
Verdict ScanFloats(std::uint64_t numel, Fn fn, CompareResult* r, std::uint64_t* worst) {
  Verdict worst_verdict;
  for (std::uint64_t i = 0; i < numel; ++i) {
    const Verdict v = fn(i);
    if (v.match) continue;
    if (++r->mismatches == 1 || v.score > worst_verdict.score) {
      worst_verdict = v;
      *worst = i;
    }
  }
  return worst_verdict;
}

// Fills everything but `message` for floating dtypes; returns the note that
// follows the worst element's values in the message.
std::string CompareFloating(const TensorView& a, const TensorView& b, const CompareOptions& o,
                            CompareResult* r) {
  std::uint64_t worst = 0;
  Verdict v;
  if (a.dtype == Dtype::kC64) {
    v = ScanFloats(
        r->numel,
        [&](std::uint64_t i) {
          return CompareComplex(internal::DecodeComplexElement(a.data, i),
                                internal::DecodeComplexElement(b.data, i), o);
        },
        r, &worst);
    if (r->mismatches == 0) return "";
    r->actual = ComplexText(internal::DecodeComplexElement(a.data, worst));
    r->expected = ComplexText(internal::DecodeComplexElement(b.data, worst));
  } else {
    v = ScanFloats(
        r->numel,
        [&](std::uint64_t i) {
          return CompareReal(internal::DecodeFloatElement(a.dtype, a.data, i),
                             internal::DecodeFloatElement(b.dtype, b.data, i), o);
        },
        r, &worst);
    if (r->mismatches == 0) return "";
    r->actual = ValueText(a.dtype, internal::DecodeFloatElement(a.dtype, a.data, worst));
    r->expected = ValueText(b.dtype, internal::DecodeFloatElement(b.dtype, b.data, worst));
  }
  r->worst_index = Unravel(a.shape, worst);
  r->abs_diff = v.diff;
  r->tolerance = v.tol;
  if (v.both_nan) return "nan vs nan; equal_nan is off";
  if (std::isnan(v.diff)) return "|diff| nan";
  if (std::isinf(v.diff)) return "|diff| inf";
  return "|diff| " + ShortText(v.diff) + " > tol " + ShortText(v.tol);
}

// Integers and BOOL: equal bit patterns are equal values whatever the sign,
// so only printing needs to know signedness.
std::string CompareExact(const TensorView& a, const TensorView& b, CompareResult* r) {
  const unsigned width = DtypeBits(a.dtype);
  std::uint64_t worst = 0;
  for (std::uint64_t i = 0; i < r->numel; ++i) {
    if (internal::LoadElementBits(a.data, width, i) !=
        internal::LoadElementBits(b.data, width, i)) {
      if (r->mismatches++ == 0) worst = i;
    }
  }
  if (r->mismatches == 0) return "";
  const std::uint64_t x = internal::LoadElementBits(a.data, width, worst);
  const std::uint64_t y = internal::LoadElementBits(b.data, width, worst);
  std::uint64_t diff;
  if (IsSigned(a.dtype)) {
    const std::int64_t sx = SignExtend(x, width);
    const std::int64_t sy = SignExtend(y, width);
    r->actual = std::to_string(sx);
    r->expected = std::to_string(sy);
    // Unsigned wrap-around gives the exact magnitude even across the full
    // range.
    diff = sx > sy ? static_cast<std::uint64_t>(sx) - static_cast<std::uint64_t>(sy)
                   : static_cast<std::uint64_t>(sy) - static_cast<std::uint64_t>(sx);
  } else {
    r->actual = std::to_string(x);
    r->expected = std::to_string(y);
    diff = x > y ? x - y : y - x;
  }
  if (a.dtype == Dtype::kBool) {
    if (x <= 1) r->actual = x ? "true" : "false";
    if (y <= 1) r->expected = y ? "true" : "false";
  }
  r->worst_index = Unravel(a.shape, worst);
  r->abs_diff = static_cast<double>(diff);
  return "|diff| " + std::to_string(diff);
}

}  // namespace

Result<CompareResult> AllClose(const TensorView& actual, const TensorView& expected,
                               const CompareOptions& options) {
  if (!(options.rtol >= 0) || !(options.atol >= 0)) {
    return InvalidArgument("rtol " + ShortText(options.rtol) + " and atol " +
                           ShortText(options.atol) + " must be non-negative numbers");
  }
  CARTON_RETURN_IF_ERROR(CheckByteSize("actual", actual));
  CARTON_RETURN_IF_ERROR(CheckByteSize("expected", expected));

  CompareResult r;
  if (actual.dtype != expected.dtype) {
    r.equal = false;
    r.message = "dtype " + std::string(DtypeName(actual.dtype)) + " vs expected " +
                std::string(DtypeName(expected.dtype));
    return r;
  }
  if (!std::equal(actual.shape.begin(), actual.shape.end(), expected.shape.begin(),
                  expected.shape.end())) {
    r.equal = false;
    r.message =
        "shape " + ShapeToString(actual.shape) + " vs expected " + ShapeToString(expected.shape);
    return r;
  }

  r.numel = actual.numel();
  const bool is_float = IsFloat(actual.dtype);
  const std::string note = is_float ? CompareFloating(actual, expected, options, &r)
                                    : CompareExact(actual, expected, &r);
  r.equal = r.mismatches == 0;
  if (r.equal) {
    if (r.numel == 0) {
      r.message = "no elements to compare";
    } else if (r.numel == 1) {
      r.message = "the one element matches";
    } else {
      r.message = "all " + std::to_string(r.numel) + " elements match";
    }
    return r;
  }
  r.message = std::to_string(r.mismatches) + " of " + std::to_string(r.numel) +
              " elements differ; " + (is_float ? "worst" : "first") + " at " +
              ShapeToString(r.worst_index) + ": " + r.actual + " vs expected " + r.expected + " (" +
              note + ")";
  return r;
}

Result<std::vector<double>> DecodeToDouble(const TensorView& tensor) {
  if (tensor.dtype == Dtype::kC64) {
    return InvalidArgument(Describe("", tensor) + ": C64 has no single real value per element");
  }
  CARTON_RETURN_IF_ERROR(CheckByteSize("", tensor));
  const std::uint64_t numel = tensor.numel();
  const unsigned width = DtypeBits(tensor.dtype);
  std::vector<double> out;
  out.reserve(numel);
  for (std::uint64_t i = 0; i < numel; ++i) {
    const std::uint64_t bits = internal::LoadElementBits(tensor.data, width, i);
    if (IsFloat(tensor.dtype)) {
      out.push_back(internal::DecodeFloatBits(tensor.dtype, bits));
    } else if (IsSigned(tensor.dtype)) {
      out.push_back(static_cast<double>(SignExtend(bits, width)));
    } else {
      out.push_back(static_cast<double>(bits));
    }
  }
  return out;
}

}  // namespace carton::safetensors
