#include "convert.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

namespace carton::torchscript {
namespace {

Status Bad(const std::string& name, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "tensor \"" + name + "\": " + what);
}

Result<std::vector<std::int64_t>> TorchSizes(const Tensor& tensor) {
  std::vector<std::int64_t> sizes;
  sizes.reserve(tensor.shape.size());
  for (std::uint64_t d : tensor.shape) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return Bad(tensor.name, "dimension " + std::to_string(d) + " is too large for torch");
    }
    sizes.push_back(static_cast<std::int64_t>(d));
  }
  return sizes;
}

// Copies little-endian unsigned values of type U into a new torch tensor of
// the signed type S (wide enough for all of them, or range-checked).
template <typename U, typename S>
Result<at::Tensor> Widen(const Tensor& tensor, const std::vector<std::int64_t>& sizes,
                         c10::ScalarType type) {
  at::Tensor out = torch::empty(sizes, torch::TensorOptions().dtype(type));
  auto* dst = out.data_ptr<S>();
  const std::size_t n = tensor.data.size() / sizeof(U);
  for (std::size_t i = 0; i < n; ++i) {
    U v;
    std::memcpy(&v, tensor.data.data() + i * sizeof(U), sizeof(U));
    if (v > static_cast<U>(std::numeric_limits<S>::max())) {
      return Bad(tensor.name, "element " + std::to_string(i) + " is " + std::to_string(v) +
                                  ", beyond the largest " + std::string(c10::toString(type)) +
                                  " torch can hold");
    }
    dst[i] = static_cast<S>(v);
  }
  return out;
}

// What FromIValue accepts, for its error messages.
constexpr char kOutputKinds[] =
    "an output must be a tensor, a str, a List[str] (or a list holding only strings), or an "
    "int, float or bool";

Status BadOutput(StatusCode code, const std::string& name, const std::string& what) {
  return Status(code, "output \"" + name + "\": " + what);
}
Status BadOutput(const std::string& name, const std::string& what) {
  return BadOutput(StatusCode::kUnsupported, name, what);
}

// A list whose every element is a str: a List[str], or a list of a type
// that can hold strings (List[Any], List[Optional[str]], ...) holding only
// strings. An empty list counts only when its element type is str or can
// hold one.
bool HoldsOnlyStrings(const c10::IValue& list) {
  const c10::TypePtr element = list.toList().elementType();
  if (element->kind() == c10::TypeKind::StringType) return true;
  if (!c10::StringType::get()->isSubtypeOf(*element)) return false;
  for (const c10::IValue& item : list.toListRef()) {
    if (!item.isString()) return false;
  }
  return true;
}

// Copies a torch tensor of signed type S into an owned carton tensor of the
// unsigned type U, checking every value's range.
template <typename S, typename U>
Result<Tensor> Narrow(const std::string& name, const at::Tensor& t, DataType dtype,
                      std::vector<std::uint64_t> shape) {
  const auto* src = t.data_ptr<S>();
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<std::byte> bytes(n * sizeof(U));
  for (std::size_t i = 0; i < n; ++i) {
    S v = src[i];
    if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<U>::max()) {
      return BadOutput(StatusCode::kInvalidArgument, name,
                       "element " + std::to_string(i) + " is " + std::to_string(v) +
                           ", outside the range of the declared " +
                           std::string(DataTypeName(dtype)));
    }
    U u = static_cast<U>(v);
    std::memcpy(bytes.data() + i * sizeof(U), &u, sizeof(U));
  }
  return Tensor::Owned(name, dtype, std::move(shape), std::move(bytes));
}

// A tensor output: a view of the torch tensor's storage (kept alive by a
// reference to it) unless it must be moved to the CPU, made contiguous,
// narrowed to a declared unsigned type or converted from bool.
Result<Tensor> TensorOutput(const std::string& name, at::Tensor t,
                            std::optional<DataType> declared) {
  t = t.detach();
  // Nested and sparse tensors have no sizes/strides to read as a plain
  // tensor; ask before touching either.
  if (t.is_nested()) {
    return BadOutput(name, "the model returned a nested tensor, which has no carton equivalent; " +
                               std::string(kOutputKinds));
  }
  if (t.layout() != c10::kStrided) {
    std::ostringstream layout;
    layout << t.layout();
    return BadOutput(name, "the model returned a tensor of layout " + layout.str() +
                               "; only dense (strided) tensors convert");
  }
  // carton has no bool dtype: bool tensors become uint8 0/1.
  if (t.scalar_type() == c10::ScalarType::Bool) t = t.to(c10::ScalarType::Byte);
  const std::optional<DataType> type = CartonTypeFor(t.scalar_type());
  if (!type) {
    return BadOutput(name, "the model returned a tensor of torch type " +
                               std::string(c10::toString(t.scalar_type())) +
                               ", which has no carton dtype");
  }
  if (!t.device().is_cpu()) t = t.cpu();
  t = t.contiguous();
  std::vector<std::uint64_t> shape;
  shape.reserve(t.dim());
  for (std::int64_t d : t.sizes()) shape.push_back(static_cast<std::uint64_t>(d));
  if (declared && *declared != *type) {
    if (*declared == DataType::kUint16 && *type == DataType::kInt32) {
      return Narrow<std::int32_t, std::uint16_t>(name, t, *declared, std::move(shape));
    }
    if (*declared == DataType::kUint32 && *type == DataType::kInt64) {
      return Narrow<std::int64_t, std::uint32_t>(name, t, *declared, std::move(shape));
    }
    if (*declared == DataType::kUint64 && *type == DataType::kInt64) {
      return Narrow<std::int64_t, std::uint64_t>(name, t, *declared, std::move(shape));
    }
  }
  const auto* bytes = static_cast<const std::byte*>(t.data_ptr());
  ByteView view(bytes, t.nbytes());
  auto keep = std::make_shared<at::Tensor>(std::move(t));
  return Tensor::View(name, *type, std::move(shape), view, std::move(keep));
}

}  // namespace

std::optional<c10::ScalarType> TorchTypeFor(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return c10::ScalarType::Float;
    case DataType::kFloat64:
      return c10::ScalarType::Double;
    case DataType::kInt8:
      return c10::ScalarType::Char;
    case DataType::kInt16:
      return c10::ScalarType::Short;
    case DataType::kInt32:
      return c10::ScalarType::Int;
    case DataType::kInt64:
      return c10::ScalarType::Long;
    case DataType::kUint8:
      return c10::ScalarType::Byte;
    case DataType::kUint16:
      return c10::ScalarType::Int;
    case DataType::kUint32:
      return c10::ScalarType::Long;
    case DataType::kUint64:
      return c10::ScalarType::Long;
    case DataType::kString:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<DataType> CartonTypeFor(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return DataType::kFloat32;
    case c10::ScalarType::Double:
      return DataType::kFloat64;
    case c10::ScalarType::Char:
      return DataType::kInt8;
    case c10::ScalarType::Short:
      return DataType::kInt16;
    case c10::ScalarType::Int:
      return DataType::kInt32;
    case c10::ScalarType::Long:
      return DataType::kInt64;
    case c10::ScalarType::Byte:
      return DataType::kUint8;
    default:
      return std::nullopt;
  }
}

Result<c10::IValue> ToIValue(const Tensor& tensor) {
  CARTON_RETURN_IF_ERROR(tensor.Validate());
  if (tensor.dtype == DataType::kString) {
    if (tensor.shape.empty()) return c10::IValue(tensor.strings.front());
    if (tensor.shape.size() != 1) {
      return Bad(tensor.name, "a string tensor of rank " + std::to_string(tensor.shape.size()) +
                                  " has no TorchScript equivalent (rank 0 is str, rank 1 "
                                  "List[str])");
    }
    c10::List<std::string> list;
    list.reserve(tensor.strings.size());
    for (const auto& s : tensor.strings) list.push_back(s);
    return c10::IValue(std::move(list));
  }
  CARTON_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes, TorchSizes(tensor));
  const c10::ScalarType type = *TorchTypeFor(tensor.dtype);
  switch (tensor.dtype) {
    case DataType::kUint16: {
      CARTON_ASSIGN_OR_RETURN(at::Tensor t,
                              (Widen<std::uint16_t, std::int32_t>(tensor, sizes, type)));
      return c10::IValue(std::move(t));
    }
    case DataType::kUint32: {
      CARTON_ASSIGN_OR_RETURN(at::Tensor t,
                              (Widen<std::uint32_t, std::int64_t>(tensor, sizes, type)));
      return c10::IValue(std::move(t));
    }
    case DataType::kUint64: {
      CARTON_ASSIGN_OR_RETURN(at::Tensor t,
                              (Widen<std::uint64_t, std::int64_t>(tensor, sizes, type)));
      return c10::IValue(std::move(t));
    }
    default:
      break;
  }
  const auto options = torch::TensorOptions().dtype(type);
  const std::size_t element = DataTypeSize(tensor.dtype);
  const auto address = reinterpret_cast<std::uintptr_t>(tensor.data.data());
  if (tensor.data.empty() || address % element != 0) {
    // Nothing to share, or bytes torch kernels may not read in place.
    at::Tensor t = torch::empty(sizes, options);
    if (!tensor.data.empty()) std::memcpy(t.data_ptr(), tensor.data.data(), tensor.data.size());
    return c10::IValue(std::move(t));
  }
  // Torch never writes an input it did not allocate unless the model does
  // so in place; the bytes stay alive as long as the tensor through `owner`.
  auto* data = const_cast<std::byte*>(tensor.data.data());
  std::shared_ptr<const void> owner = tensor.owner;
  at::Tensor t = torch::from_blob(
      data, sizes, [owner](void*) mutable { owner.reset(); }, options);
  return c10::IValue(std::move(t));
}

std::string TorchScriptTypeName(const c10::IValue& value) {
  // A tensor's own type prints its sizes and strides; the annotation a
  // model's source would use is plain `Tensor`.
  const c10::TypePrinter plain_tensors = [](const c10::Type& t) -> c10::optional<std::string> {
    if (t.kind() == c10::TypeKind::TensorType) return std::string("Tensor");
    return c10::nullopt;
  };
  try {
    return value.type()->annotation_str(plain_tensors);
  } catch (const std::exception&) {
    return value.tagKind();
  }
}

Result<Tensor> FromIValue(const std::string& name, const c10::IValue& value,
                          std::optional<DataType> declared) {
  if (value.isTensor()) return TensorOutput(name, value.toTensor(), declared);
  if (value.isString()) return Tensor::Strings(name, {}, {value.toStringRef()});
  if (value.isList() && HoldsOnlyStrings(value)) {
    std::vector<std::string> strings;
    const auto items = value.toListRef();
    strings.reserve(items.size());
    for (const c10::IValue& item : items) strings.push_back(item.toStringRef());
    const std::uint64_t n = strings.size();
    return Tensor::Strings(name, {n}, std::move(strings));
  }
  // Python scalars: rank-0 tensors of the widest carton type of their kind.
  if (value.isInt()) {
    return TensorOutput(name, torch::scalar_tensor(value.toInt(), torch::kInt64), declared);
  }
  if (value.isDouble()) {
    return TensorOutput(name, torch::scalar_tensor(value.toDouble(), torch::kFloat64), declared);
  }
  if (value.isBool()) {
    return TensorOutput(name, torch::scalar_tensor(value.toBool(), torch::kBool), declared);
  }
  return BadOutput(name, "the model returned " + TorchScriptTypeName(value) + "; " + kOutputKinds);
}

}  // namespace carton::torchscript
