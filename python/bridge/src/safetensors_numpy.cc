#include "carton/pybridge/safetensors_numpy.h"

#include <array>
#include <limits>
#include <utility>
#include <vector>

namespace carton::pybridge {
namespace {

using safetensors::Dtype;

struct NamedDtype {
  std::string_view name;
  Dtype dtype;
};

// The names the reference's `serialize` maps (numpy's and torch's
// spellings), then the header spellings.
constexpr std::array<NamedDtype, 19> kFrameworkNames = {{
    {"bool", Dtype::kBool},
    {"int8", Dtype::kI8},
    {"uint8", Dtype::kU8},
    {"int16", Dtype::kI16},
    {"uint16", Dtype::kU16},
    {"int32", Dtype::kI32},
    {"uint32", Dtype::kU32},
    {"int64", Dtype::kI64},
    {"uint64", Dtype::kU64},
    {"float16", Dtype::kF16},
    {"float32", Dtype::kF32},
    {"float64", Dtype::kF64},
    {"bfloat16", Dtype::kBF16},
    {"complex64", Dtype::kC64},
    {"float8_e4m3fn", Dtype::kF8E4M3},
    {"float8_e4m3fnuz", Dtype::kF8E4M3Fnuz},
    {"float8_e5m2", Dtype::kF8E5M2},
    {"float8_e5m2fnuz", Dtype::kF8E5M2Fnuz},
    {"float8_e8m0fnu", Dtype::kF8E8M0},
}};

}  // namespace

std::optional<std::string> NumpyTypeString(Dtype d) {
  switch (d) {
    case Dtype::kBool:
      return "|b1";
    case Dtype::kU8:
      return "|u1";
    case Dtype::kI8:
      return "|i1";
    case Dtype::kI16:
      return "<i2";
    case Dtype::kU16:
      return "<u2";
    case Dtype::kF16:
      return "<f2";
    case Dtype::kI32:
      return "<i4";
    case Dtype::kU32:
      return "<u4";
    case Dtype::kF32:
      return "<f4";
    case Dtype::kC64:
      return "<c8";
    case Dtype::kF64:
      return "<f8";
    case Dtype::kI64:
      return "<i8";
    case Dtype::kU64:
      return "<u8";
    default:
      return std::nullopt;
  }
}

std::optional<Dtype> SafetensorsDtypeFromName(std::string_view name) {
  for (const NamedDtype& n : kFrameworkNames) {
    if (n.name == name) return n.dtype;
  }
  return safetensors::ParseDtype(name);
}

Result<py::array> SafetensorsViewToNumpy(const safetensors::TensorView& tensor, py::handle base) {
  const std::string name(tensor.name);
  const std::optional<std::string> type = NumpyTypeString(tensor.dtype);
  if (!type) {
    return Unsupported("tensor \"" + name + "\": dtype " +
                       std::string(safetensors::DtypeName(tensor.dtype)) +
                       " has no numpy equivalent (use framework=\"pt\")");
  }
  std::vector<ssize_t> shape;
  shape.reserve(tensor.shape.size());
  for (std::uint64_t d : tensor.shape) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<ssize_t>::max())) {
      return InvalidArgument("tensor \"" + name + "\": dimension " + std::to_string(d) +
                             " does not fit numpy");
    }
    shape.push_back(static_cast<ssize_t>(d));
  }
  py::dtype dtype(*type);
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = dtype.itemsize();
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  py::array out = tensor.data.empty() ? py::array(dtype, shape, strides)
                                      : py::array(dtype, shape, strides, tensor.data.data(), base);
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

}  // namespace carton::pybridge
