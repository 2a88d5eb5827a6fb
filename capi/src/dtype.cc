#include "dtype.h"

#include <string>

#include "errors.h"

namespace carton::capi {
namespace {

static_assert(CARTON_DTYPE_FLOAT32 == static_cast<int>(DataType::kFloat32));
static_assert(CARTON_DTYPE_FLOAT64 == static_cast<int>(DataType::kFloat64));
static_assert(CARTON_DTYPE_STRING == static_cast<int>(DataType::kString));
static_assert(CARTON_DTYPE_INT8 == static_cast<int>(DataType::kInt8));
static_assert(CARTON_DTYPE_INT16 == static_cast<int>(DataType::kInt16));
static_assert(CARTON_DTYPE_INT32 == static_cast<int>(DataType::kInt32));
static_assert(CARTON_DTYPE_INT64 == static_cast<int>(DataType::kInt64));
static_assert(CARTON_DTYPE_UINT8 == static_cast<int>(DataType::kUint8));
static_assert(CARTON_DTYPE_UINT16 == static_cast<int>(DataType::kUint16));
static_assert(CARTON_DTYPE_UINT32 == static_cast<int>(DataType::kUint32));
static_assert(CARTON_DTYPE_UINT64 == static_cast<int>(DataType::kUint64));

}  // namespace

std::optional<DataType> FromCDtype(carton_dtype dtype) {
  // A C caller may pass any int: compare it as one.
  const int value = static_cast<int>(dtype);
  if (value < CARTON_DTYPE_FLOAT32 || value > CARTON_DTYPE_UINT64) return std::nullopt;
  return static_cast<DataType>(value);
}

}  // namespace carton::capi

extern "C" {

const char* carton_dtype_name(carton_dtype dtype) {
  const auto t = carton::capi::FromCDtype(dtype);
  // DataTypeName returns string literals (NUL-terminated).
  return t ? carton::DataTypeName(*t).data() : nullptr;
}

size_t carton_dtype_size(carton_dtype dtype) {
  const auto t = carton::capi::FromCDtype(dtype);
  return t ? carton::DataTypeSize(*t) : 0;
}

carton_status carton_dtype_parse(const char* name, carton_dtype* out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = CARTON_DTYPE_FLOAT32;
    CARTON_RETURN_IF_ERROR(capi::Require(name, fn, "name"));
    const auto t = ParseDataType(name);
    if (!t) {
      std::string names;
      for (DataType d : AllDataTypes())
        names += (names.empty() ? "" : ", ") + std::string(DataTypeName(d));
      return InvalidArgument(std::string(fn) + ": \"" + name + "\" is not a dtype (" + names + ")");
    }
    *out = capi::ToCDtype(*t);
    return Status::Ok();
  });
}

}  // extern "C"
