// carton_tensors: the map of named tensors given to and returned by a
// model, and what safetensors files are read into and written from.
#include "tensors.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/utf8.h"
#include "carton/safetensors/tensor.h"
#include "dtype.h"
#include "errors.h"
#include "handles.h"

namespace carton::capi {
namespace {

// The C side hands the caller's bytes to the library as they are, and the
// library's tensors are little-endian.
static_assert(std::endian::native == std::endian::little,
              "carton's C API needs a little-endian host");

Result<std::vector<std::uint64_t>> ShapeOf(const char* function, std::size_t rank,
                                           const std::uint64_t* shape) {
  if (rank > 0 && shape == nullptr) return NullArgument(function, "shape (with a rank above 0)");
  return std::vector<std::uint64_t>(shape, shape + rank);
}

// "tensor "x" (float32 [2, 3])" for messages.
std::string Describe(const std::string& name, DataType dtype,
                     const std::vector<std::uint64_t>& shape) {
  return "tensor \"" + name + "\" (" + std::string(DataTypeName(dtype)) + " " +
         safetensors::ShapeToString(shape) + ")";
}

// True when `strides` (in elements) are C order for `shape`; dimensions of
// size 1 may have any stride. REQUIRES: the element count does not overflow.
bool IsCOrder(const std::vector<std::uint64_t>& shape, const std::int64_t* strides) {
  std::uint64_t expected = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && (strides[d] < 0 || static_cast<std::uint64_t>(strides[d]) != expected)) {
      return false;
    }
    expected *= shape[d];
  }
  return true;
}

// OK when every byte offset the shape and strides address fits a
// ptrdiff_t. REQUIRES: no dimension is 0.
Status CheckStrides(const std::string& where, const std::vector<std::uint64_t>& shape,
                    const std::int64_t* strides, std::uint64_t size) {
  std::uint64_t reach = 0;  // the largest |offset| in bytes
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::uint64_t step = strides[d] < 0 ? 0 - static_cast<std::uint64_t>(strides[d])
                                              : static_cast<std::uint64_t>(strides[d]);
    std::uint64_t extent = 0;
    if (!CheckedMul(shape[d] - 1, step, &extent) || !CheckedMul(extent, size, &extent) ||
        !CheckedAdd(reach, extent, &reach) || reach > static_cast<std::uint64_t>(PTRDIFF_MAX)) {
      return InvalidArgument(where + ": strides address offsets that overflow");
    }
  }
  return Status::Ok();
}

// Copies the elements `strides` address into a C-order buffer of `bytes`
// bytes. REQUIRES: CheckStrides passed, rank >= 1, no dimension is 0.
std::vector<std::byte> Gather(const std::byte* base, const std::vector<std::uint64_t>& shape,
                              const std::int64_t* strides, std::size_t size, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  std::byte* dst = out.data();
  const std::size_t rank = shape.size();
  const std::ptrdiff_t inner_step =
      static_cast<std::ptrdiff_t>(strides[rank - 1]) * static_cast<std::ptrdiff_t>(size);
  std::vector<std::uint64_t> index(rank, 0);
  std::ptrdiff_t row = 0;  // byte offset of index[0 .. rank-2], 0
  for (std::byte* end = dst + bytes; dst != end;) {
    std::ptrdiff_t at = row;
    for (std::uint64_t j = 0; j < shape[rank - 1]; ++j, at += inner_step) {
      std::memcpy(dst, base + at, size);
      dst += size;
    }
    // The next row: an odometer over the outer dimensions.
    for (std::size_t d = rank - 1; d-- > 0;) {
      const std::ptrdiff_t step =
          static_cast<std::ptrdiff_t>(strides[d]) * static_cast<std::ptrdiff_t>(size);
      if (++index[d] < shape[d]) {
        row += step;
        break;
      }
      row -= static_cast<std::ptrdiff_t>(shape[d] - 1) * step;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

Status CheckNewName(const char* function, const carton_tensors& tensors, const char* name) {
  CARTON_RETURN_IF_ERROR(Require(name, function, "name"));
  const std::string_view n(name);
  if (n.empty()) return InvalidArgument(std::string(function) + ": the tensor name is empty");
  if (!IsValidUtf8(n)) {
    return InvalidArgument(std::string(function) + ": the tensor name is not valid UTF-8");
  }
  for (const auto& t : tensors.tensors) {
    if (t.name == n) {
      return InvalidArgument(std::string(function) + ": tensor \"" + t.name +
                             "\" is already in the map");
    }
  }
  return Status::Ok();
}

Status AddTensors(const char* function, carton_tensors* into, std::vector<Tensor> tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (tensors[j].name == tensors[i].name) {
        return InvalidArgument(std::string(function) + ": tensor \"" + tensors[i].name +
                               "\" appears twice");
      }
    }
    CARTON_RETURN_IF_ERROR(CheckNewName(function, *into, tensors[i].name.c_str()));
  }
  into->tensors.reserve(into->tensors.size() + tensors.size());
  for (auto& t : tensors) into->tensors.push_back(std::move(t));
  return Status::Ok();
}

Result<const Tensor*> TensorAt(const char* function, const carton_tensors* tensors,
                               std::size_t index) {
  CARTON_RETURN_IF_ERROR(Require(tensors, function, "tensors"));
  if (index >= tensors->tensors.size()) {
    return OutOfRange(function, "tensor", index, tensors->tensors.size());
  }
  return &tensors->tensors[index];
}

Result<Tensor> NumericTensor(const char* function, const char* name, carton_dtype dtype,
                             const void* data, std::size_t rank, const std::uint64_t* shape,
                             const std::int64_t* strides) {
  const auto type = FromCDtype(dtype);
  if (!type) {
    return InvalidArgument(std::string(function) + ": tensor \"" + name + "\": dtype " +
                           std::to_string(static_cast<int>(dtype)) + " is not a carton_dtype");
  }
  if (*type == DataType::kString) {
    return InvalidArgument(std::string(function) + ": tensor \"" + name +
                           "\": string tensors are added with carton_tensors_add_strings");
  }
  CARTON_ASSIGN_OR_RETURN(std::vector<std::uint64_t> dims, ShapeOf(function, rank, shape));
  const std::string where = std::string(function) + ": " + Describe(name, *type, dims);
  const auto numel = safetensors::CheckedNumel(dims);
  std::uint64_t bytes = 0;
  const std::uint64_t size = DataTypeSize(*type);
  if (!numel || !CheckedMul(*numel, size, &bytes) || bytes > PTRDIFF_MAX) {
    return InvalidArgument(where + ": the byte size overflows");
  }
  if (bytes == 0) return Tensor::View(name, *type, std::move(dims), ByteView());
  if (data == nullptr) return NullArgument(function, "data (of a tensor with elements)");
  const auto* base = static_cast<const std::byte*>(data);
  if (strides == nullptr || IsCOrder(dims, strides)) {
    return Tensor::View(name, *type, std::move(dims), ByteView(base, bytes));
  }
  CARTON_RETURN_IF_ERROR(CheckStrides(where, dims, strides, size));
  auto gathered = Gather(base, dims, strides, size, bytes);
  return Tensor::Owned(name, *type, std::move(dims), std::move(gathered));
}

Result<Tensor> StringTensor(const char* function, const char* name, const char* const* strings,
                            std::size_t rank, const std::uint64_t* shape) {
  CARTON_ASSIGN_OR_RETURN(std::vector<std::uint64_t> dims, ShapeOf(function, rank, shape));
  const std::string where = std::string(function) + ": " + Describe(name, DataType::kString, dims);
  const auto numel = safetensors::CheckedNumel(dims);
  if (!numel || *numel > SIZE_MAX / sizeof(std::string)) {
    return InvalidArgument(where + ": the element count overflows");
  }
  if (*numel > 0 && strings == nullptr) return NullArgument(function, "strings");
  std::vector<std::string> values;
  values.reserve(*numel);
  for (std::uint64_t i = 0; i < *numel; ++i) {
    if (strings[i] == nullptr) {
      return InvalidArgument(where + ": string " + std::to_string(i) + " is NULL");
    }
    const std::string_view s(strings[i]);
    if (const std::size_t bad = FindInvalidUtf8(s); bad != std::string_view::npos) {
      return InvalidArgument(where + ": string " + std::to_string(i) +
                             " is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    }
    values.emplace_back(s);
  }
  return Tensor::Strings(name, std::move(dims), std::move(values));
}

}  // namespace carton::capi

extern "C" {

carton_status carton_tensors_new(carton_tensors** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = capi::NewHandle<carton_tensors>();
    return Status::Ok();
  });
}

void carton_tensors_free(carton_tensors* tensors) { carton::capi::FreeHandle(tensors); }

carton_status carton_tensors_add(carton_tensors* tensors, const char* name, carton_dtype dtype,
                                 const void* data, size_t rank, const uint64_t* shape,
                                 const int64_t* strides) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(tensors, fn, "tensors"));
    CARTON_RETURN_IF_ERROR(capi::CheckNewName(fn, *tensors, name));
    CARTON_ASSIGN_OR_RETURN(Tensor t,
                            capi::NumericTensor(fn, name, dtype, data, rank, shape, strides));
    tensors->tensors.push_back(std::move(t));
    return Status::Ok();
  });
}

carton_status carton_tensors_add_strings(carton_tensors* tensors, const char* name,
                                         const char* const* strings, size_t rank,
                                         const uint64_t* shape) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(tensors, fn, "tensors"));
    CARTON_RETURN_IF_ERROR(capi::CheckNewName(fn, *tensors, name));
    CARTON_ASSIGN_OR_RETURN(Tensor t, capi::StringTensor(fn, name, strings, rank, shape));
    tensors->tensors.push_back(std::move(t));
    return Status::Ok();
  });
}

carton_status carton_tensors_count(const carton_tensors* tensors, size_t* count) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(count, fn, "count"));
    *count = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(tensors, fn, "tensors"));
    *count = tensors->tensors.size();
    return Status::Ok();
  });
}

carton_status carton_tensors_find(const carton_tensors* tensors, const char* name, size_t* index) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(index, fn, "index"));
    *index = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(tensors, fn, "tensors"));
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    std::string names;
    for (std::size_t i = 0; i < tensors->tensors.size(); ++i) {
      if (tensors->tensors[i].name == name) {
        *index = i;
        return Status::Ok();
      }
      names += (names.empty() ? "" : ", ") + tensors->tensors[i].name;
    }
    return NotFound("no tensor named \"" + std::string(name) +
                    "\" (the map has: " + (names.empty() ? "no tensors" : names) + ")");
  });
}

carton_status carton_tensors_name(const carton_tensors* tensors, size_t index, const char** name) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    *name = nullptr;
    CARTON_ASSIGN_OR_RETURN(const Tensor* t, capi::TensorAt(fn, tensors, index));
    *name = t->name.c_str();
    return Status::Ok();
  });
}

carton_status carton_tensors_dtype(const carton_tensors* tensors, size_t index,
                                   carton_dtype* dtype) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(dtype, fn, "dtype"));
    *dtype = CARTON_DTYPE_FLOAT32;
    CARTON_ASSIGN_OR_RETURN(const Tensor* t, capi::TensorAt(fn, tensors, index));
    *dtype = capi::ToCDtype(t->dtype);
    return Status::Ok();
  });
}

carton_status carton_tensors_shape(const carton_tensors* tensors, size_t index, size_t* rank,
                                   const uint64_t** shape) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(rank, fn, "rank"));
    *rank = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(shape, fn, "shape"));
    *shape = nullptr;
    CARTON_ASSIGN_OR_RETURN(const Tensor* t, capi::TensorAt(fn, tensors, index));
    *rank = t->shape.size();
    *shape = t->shape.empty() ? nullptr : t->shape.data();
    return Status::Ok();
  });
}

carton_status carton_tensors_data(const carton_tensors* tensors, size_t index, const void** data,
                                  size_t* size) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(data, fn, "data"));
    *data = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(size, fn, "size"));
    *size = 0;
    CARTON_ASSIGN_OR_RETURN(const Tensor* t, capi::TensorAt(fn, tensors, index));
    if (t->dtype == DataType::kString) {
      return InvalidArgument(std::string(fn) + ": tensor \"" + t->name +
                             "\" is a string tensor (read it with carton_tensors_string)");
    }
    *data = t->data.empty() ? nullptr : t->data.data();
    *size = t->data.size();
    return Status::Ok();
  });
}

carton_status carton_tensors_string(const carton_tensors* tensors, size_t index, size_t element,
                                    const char** string, size_t* length) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(string, fn, "string"));
    *string = nullptr;
    if (length != nullptr) *length = 0;
    CARTON_ASSIGN_OR_RETURN(const Tensor* t, capi::TensorAt(fn, tensors, index));
    if (t->dtype != DataType::kString) {
      return InvalidArgument(std::string(fn) + ": tensor \"" + t->name + "\" is " +
                             std::string(DataTypeName(t->dtype)) +
                             ", not a string tensor (read it with carton_tensors_data)");
    }
    if (element >= t->strings.size()) {
      return capi::OutOfRange(fn, ("element of tensor \"" + t->name + "\"").c_str(), element,
                              t->strings.size());
    }
    *string = t->strings[element].c_str();
    if (length != nullptr) *length = t->strings[element].size();
    return Status::Ok();
  });
}

}  // extern "C"
