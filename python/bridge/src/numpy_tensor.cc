#include "carton/pybridge/numpy_tensor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "carton/pybridge/errors.h"

namespace carton::pybridge {
namespace {

using carton::Tensor;

// numpy's type numbers (stable across numpy 1.x and 2.x).
enum NpyType : int {
  kNpyBool = 0,
  kNpyByte = 1,
  kNpyUbyte = 2,
  kNpyShort = 3,
  kNpyUshort = 4,
  kNpyInt = 5,
  kNpyUint = 6,
  kNpyLong = 7,
  kNpyUlong = 8,
  kNpyLonglong = 9,
  kNpyUlonglong = 10,
  kNpyFloat = 11,
  kNpyDouble = 12,
  kNpyObject = 17,
  kNpyUnicode = 19,
};

constexpr std::size_t kTypes = 11;  // DataType values

// What the conversions use, imported once by Init(). Strong references,
// never released: they live until the process ends.
struct Numpy {
  PyObject* generic = nullptr;             // numpy.generic
  PyObject* asarray = nullptr;             // numpy.asarray
  PyObject* ascontiguousarray = nullptr;   // numpy.ascontiguousarray
  std::array<PyObject*, kTypes> dtypes{};  // by DataType; null for kString
  PyObject* object_dtype = nullptr;        // numpy.dtype(object)
};
Numpy* numpy = nullptr;

Status Bad(const std::string& name, const std::string& what) {
  return InvalidArgument("tensor \"" + name + "\": " + what);
}

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

py::dtype DtypeOf(DataType t) {
  return py::reinterpret_borrow<py::dtype>(numpy->dtypes[static_cast<std::size_t>(t)]);
}

std::optional<DataType> DataTypeOfNpy(int type_num) {
  switch (type_num) {
    case kNpyFloat:
      return DataType::kFloat32;
    case kNpyDouble:
      return DataType::kFloat64;
    case kNpyByte:
      return DataType::kInt8;
    case kNpyUbyte:
      return DataType::kUint8;
    case kNpyShort:
      return DataType::kInt16;
    case kNpyUshort:
      return DataType::kUint16;
    case kNpyInt:
      return DataType::kInt32;
    case kNpyUint:
      return DataType::kUint32;
    case kNpyLong:
      return sizeof(long) == 8 ? DataType::kInt64 : DataType::kInt32;
    case kNpyUlong:
      return sizeof(long) == 8 ? DataType::kUint64 : DataType::kUint32;
    case kNpyLonglong:
      return DataType::kInt64;
    case kNpyUlonglong:
      return DataType::kUint64;
    default:
      return std::nullopt;
  }
}

bool IsInteger(DataType t) { return t != DataType::kFloat32 && t != DataType::kFloat64; }

// Keeps a Python object alive from C++: the deleter takes the GIL to drop
// the reference, and leaks it once the interpreter is gone.
std::shared_ptr<const void> PythonOwner(py::object object) {
  return std::shared_ptr<const void>(object.release().ptr(), [](const void* p) {
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
    PyGILState_Release(state);
  });
}

// Little-endian bytes of `v`.
template <typename T>
void AppendLE(std::vector<std::byte>* out, T v) {
  std::array<std::byte, sizeof(T)> b;
  std::memcpy(b.data(), &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(b.begin(), b.end());
  out->insert(out->end(), b.begin(), b.end());
}

Result<std::vector<ssize_t>> PyShape(const Tensor& t) {
  std::vector<ssize_t> shape;
  shape.reserve(t.shape.size());
  for (std::uint64_t d : t.shape) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<ssize_t>::max())) {
      return Bad(t.name, "dimension " + std::to_string(d) + " does not fit numpy");
    }
    shape.push_back(static_cast<ssize_t>(d));
  }
  return shape;
}

std::vector<ssize_t> CStrides(const std::vector<ssize_t>& shape, ssize_t itemsize) {
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Result<py::object> StringsToPython(const Tensor& t) {
  CARTON_ASSIGN_OR_RETURN(std::vector<ssize_t> shape, PyShape(t));
  const auto n = static_cast<ssize_t>(t.strings.size());
  py::array flat(py::reinterpret_borrow<py::dtype>(numpy->object_dtype), std::vector<ssize_t>{n},
                 std::vector<ssize_t>{static_cast<ssize_t>(sizeof(PyObject*))});
  auto** slots = static_cast<PyObject**>(flat.mutable_data());
  for (ssize_t i = 0; i < n; ++i) {
    const std::string& s = t.strings[static_cast<std::size_t>(i)];
    PyObject* str = PyUnicode_DecodeUTF8(s.data(), static_cast<ssize_t>(s.size()), "strict");
    if (str == nullptr) {
      PyErr_Clear();
      return Bad(t.name, "string " + std::to_string(i) + " is not valid UTF-8");
    }
    PyObject* old = slots[i];  // null or None, as numpy filled it
    slots[i] = str;
    Py_XDECREF(old);
  }
  py::tuple dims(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) dims[i] = py::int_(shape[i]);
  return py::object(flat.attr("reshape")(dims));
}

Result<py::object> NumericToPython(const Tensor& t, ArrayMode mode) {
  CARTON_ASSIGN_OR_RETURN(std::vector<ssize_t> shape, PyShape(t));
  const auto itemsize = static_cast<ssize_t>(DataTypeSize(t.dtype));
  std::vector<ssize_t> strides = CStrides(shape, itemsize);
  py::dtype dtype = DtypeOf(t.dtype);
  if (mode == ArrayMode::kCopy || t.data.empty()) {
    py::array out(dtype, shape, strides);
    if (!t.data.empty()) std::memcpy(out.mutable_data(), t.data.data(), t.data.size());
    if (mode == ArrayMode::kView) {
      py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    }
    return py::object(std::move(out));
  }
  // The capsule is the array's base: it holds the tensor's owner for as
  // long as the array (or any view of it, which refers to the array) lives.
  py::capsule base(new std::shared_ptr<const void>(t.owner),
                   [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  py::array out(dtype, shape, strides, t.data.data(), base);
  if (mode == ArrayMode::kView) {
    py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  }
  return py::object(std::move(out));
}

// Each element of `flat` (a list) as UTF-8.
Result<std::vector<std::string>> Utf8Strings(const std::string& name, py::handle flat) {
  std::vector<std::string> out;
  const ssize_t n = PyList_GET_SIZE(flat.ptr());
  out.reserve(static_cast<std::size_t>(n));
  for (ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyList_GET_ITEM(flat.ptr(), i);
    if (!PyUnicode_Check(item)) {
      return Bad(name, "element " + std::to_string(i) + " has type " + Py_TYPE(item)->tp_name +
                           "; an object array must hold only str");
    }
    ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(item, &size);
    if (data == nullptr) {
      PyErr_Clear();
      return Bad(name, "string " + std::to_string(i) + " cannot be encoded as UTF-8");
    }
    out.emplace_back(data, static_cast<std::size_t>(size));
  }
  return out;
}

std::vector<std::uint64_t> ShapeOf(const py::array& arr) {
  std::vector<std::uint64_t> shape;
  for (ssize_t i = 0; i < arr.ndim(); ++i)
    shape.push_back(static_cast<std::uint64_t>(arr.shape(i)));
  return shape;
}

std::string DtypeText(const py::array& arr) { return py::str(arr.dtype()).cast<std::string>(); }

Result<Tensor> FromArray(std::string name, py::array arr) {
  const int type_num = arr.dtype().num();
  std::vector<std::uint64_t> shape = ShapeOf(arr);
  if (type_num == kNpyUnicode || type_num == kNpyObject) {
    py::object flat = arr.attr("ravel")().attr("tolist")();
    CARTON_ASSIGN_OR_RETURN(std::vector<std::string> strings, Utf8Strings(name, flat));
    return Tensor::Strings(std::move(name), std::move(shape), std::move(strings));
  }
  if (type_num == kNpyBool) {
    // numpy bools are 0/1 when numpy made them, but a view of other bytes
    // can hold any value: one copy normalizes them.
    arr = arr.attr("astype")(DtypeOf(DataType::kUint8));
  }
  const std::optional<DataType> type = DataTypeOfNpy(arr.dtype().num());
  if (!type) {
    return Bad(name, "numpy dtype " + DtypeText(arr) +
                         " has no carton dtype (float32, float64, int8...int64, uint8...uint64, "
                         "bool, str)");
  }
  const char order = arr.dtype().byteorder();
  const bool swapped = order == '>' ? std::endian::native == std::endian::little
                                    : (order == '<' && std::endian::native == std::endian::big);
  if (swapped) {
    arr = arr.attr("astype")(DtypeOf(*type));
  }
  const int flags = py::detail::array_proxy(arr.ptr())->flags;
  if ((flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) == 0 ||
      (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) == 0) {
    arr =
        py::reinterpret_steal<py::array>(PyObject_CallOneArg(numpy->ascontiguousarray, arr.ptr()));
    if (!arr) throw py::error_already_set();
  }
  std::uint64_t bytes = DataTypeSize(*type);
  for (std::uint64_t d : shape) {
    if (!CheckedMul(bytes, d, &bytes)) return Bad(name, "the array is too large");
  }
  if (bytes == 0) return Tensor::Owned(std::move(name), *type, std::move(shape), {});
  ByteView view(static_cast<const std::byte*>(arr.data()), static_cast<std::size_t>(bytes));
  return Tensor::View(std::move(name), *type, std::move(shape), view, PythonOwner(std::move(arr)));
}

py::array AsArray(py::handle value) {
  auto out = py::reinterpret_steal<py::object>(PyObject_CallOneArg(numpy->asarray, value.ptr()));
  if (!out) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(out.release());
}

template <typename T>
Result<Tensor> IntScalar(const std::string& name, py::handle value, DataType type) {
  std::vector<std::byte> bytes;
  int overflow = 0;
  bool fits = true;
  if constexpr (std::is_signed_v<T>) {
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    fits = overflow == 0 && v >= static_cast<long long>(std::numeric_limits<T>::min()) &&
           v <= static_cast<long long>(std::numeric_limits<T>::max());
    if (fits) AppendLE<T>(&bytes, static_cast<T>(v));
  } else {
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
      if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        fits = false;
      } else {
        fits = u <= std::numeric_limits<T>::max();
        if (fits) AppendLE<T>(&bytes, static_cast<T>(u));
      }
    } else {
      fits = overflow == 0 && v >= 0 &&
             static_cast<unsigned long long>(v) <= std::numeric_limits<T>::max();
      if (fits) AppendLE<T>(&bytes, static_cast<T>(v));
    }
  }
  if (!fits) {
    return Bad(name, "the int " + py::str(value).cast<std::string>() + " does not fit " +
                         std::string(DataTypeName(type)));
  }
  return Tensor::Owned(name, type, {}, std::move(bytes));
}

Result<Tensor> IntTensor(const std::string& name, py::handle value, DataType type) {
  switch (type) {
    case DataType::kInt8:
      return IntScalar<std::int8_t>(name, value, type);
    case DataType::kInt16:
      return IntScalar<std::int16_t>(name, value, type);
    case DataType::kInt32:
      return IntScalar<std::int32_t>(name, value, type);
    case DataType::kInt64:
      return IntScalar<std::int64_t>(name, value, type);
    case DataType::kUint8:
      return IntScalar<std::uint8_t>(name, value, type);
    case DataType::kUint16:
      return IntScalar<std::uint16_t>(name, value, type);
    case DataType::kUint32:
      return IntScalar<std::uint32_t>(name, value, type);
    case DataType::kUint64:
      return IntScalar<std::uint64_t>(name, value, type);
    default:
      break;
  }
  return Internal("IntTensor called with " + std::string(DataTypeName(type)));
}

Result<Tensor> FloatTensor(const std::string& name, double v, DataType type) {
  std::vector<std::byte> bytes;
  if (type == DataType::kFloat32) {
    AppendLE<float>(&bytes, static_cast<float>(v));
  } else {
    AppendLE<double>(&bytes, v);
  }
  return Tensor::Owned(name, type, {}, std::move(bytes));
}

// A Python bool, int or float as a rank-0 tensor.
Result<Tensor> NumberToTensor(const std::string& name, py::handle value,
                              std::optional<DataType> hint) {
  const bool numeric_hint = hint && *hint != DataType::kString;
  if (PyFloat_Check(value.ptr())) {
    const double v = PyFloat_AS_DOUBLE(value.ptr());
    const DataType type =
        numeric_hint && *hint == DataType::kFloat32 ? DataType::kFloat32 : DataType::kFloat64;
    return FloatTensor(name, v, type);
  }
  // bool and int (bool is an int subclass).
  if (numeric_hint && !IsInteger(*hint)) {
    const double v = PyLong_AsDouble(value.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return FloatTensor(name, v, *hint);
  }
  DataType type = DataType::kInt64;
  if (numeric_hint) {
    type = *hint;
  } else if (PyBool_Check(value.ptr())) {
    type = DataType::kUint8;
  }
  return IntTensor(name, value, type);
}

// numpy.asarray of a list of Python numbers gives int64, float64 or bool;
// a numeric hint narrows or widens those (ints range-checked).
Result<Tensor> ListToTensor(const std::string& name, py::handle list,
                            std::optional<DataType> hint) {
  const bool numeric_hint = hint && *hint != DataType::kString;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(list);
  const std::size_t n = seq.size();
  if (n == 0) {
    if (hint == DataType::kString) return Tensor::Strings(name, {0}, {});
    return Tensor::Owned(name, numeric_hint ? *hint : DataType::kFloat64, {0}, {});
  }
  std::size_t strings = 0;
  for (py::handle item : seq) strings += PyUnicode_Check(item.ptr()) ? 1 : 0;
  if (strings == n) {
    py::list flat(seq);
    CARTON_ASSIGN_OR_RETURN(std::vector<std::string> values, Utf8Strings(name, flat));
    return Tensor::Strings(name, {static_cast<std::uint64_t>(n)}, std::move(values));
  }
  if (strings != 0) return Bad(name, "a list mixing str with other values");
  py::array arr = AsArray(list);
  const int type_num = arr.dtype().num();
  const bool from_numbers = type_num == kNpyBool || type_num == kNpyLong ||
                            type_num == kNpyLonglong || type_num == kNpyDouble;
  if (numeric_hint && from_numbers && DataTypeOfNpy(type_num) != hint) {
    const bool to_int = IsInteger(*hint);
    if (type_num == kNpyDouble && to_int) return FromArray(name, std::move(arr));
    if (to_int && type_num != kNpyBool && arr.size() > 0) {
      // Range-check against the hint's limits before the cast.
      py::object info = py::module_::import("numpy").attr("iinfo")(DtypeOf(*hint));
      const bool fits =
          arr.attr("min")() >= info.attr("min") && arr.attr("max")() <= info.attr("max");
      if (!fits) {
        return Bad(name, "list values outside the range of " + std::string(DataTypeName(*hint)));
      }
    }
    arr = arr.attr("astype")(DtypeOf(*hint));
  }
  return FromArray(name, std::move(arr));
}

Result<Tensor> Convert(std::string name, py::handle value, std::optional<DataType> hint) {
  if (py::isinstance<py::array>(value)) {
    return FromArray(std::move(name), py::reinterpret_borrow<py::array>(value));
  }
  if (PyObject_IsInstance(value.ptr(), numpy->generic) == 1) {
    return FromArray(std::move(name), AsArray(value));
  }
  if (PyUnicode_Check(value.ptr())) {
    ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
    if (data == nullptr) {
      PyErr_Clear();
      return Bad(name, "the str cannot be encoded as UTF-8");
    }
    return Tensor::Strings(std::move(name), {},
                           {std::string(data, static_cast<std::size_t>(size))});
  }
  if (PyBool_Check(value.ptr()) || PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr())) {
    return NumberToTensor(name, value, hint);
  }
  if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    return ListToTensor(name, value, hint);
  }
  if (PyBytes_Check(value.ptr()) || PyByteArray_Check(value.ptr())) {
    return Bad(name, "a value of type " + TypeName(value) +
                         " is not a tensor; decode it to str, or give a numpy uint8 array");
  }
  if (PyComplex_Check(value.ptr())) {
    return Bad(name, "a Python complex has no carton dtype");
  }
  if (py::hasattr(value, "__array__") || PyObject_CheckBuffer(value.ptr())) {
    return FromArray(std::move(name), AsArray(value));
  }
  return Bad(name, "a value of type " + TypeName(value) +
                       " is not a tensor (give a numpy array, a number, a str or a list)");
}

}  // namespace

Status Init() {
  if (numpy != nullptr) return Status::Ok();
  try {
    py::module_ np = py::module_::import("numpy");
    py::detail::npy_api::get();  // loads numpy's C API table
    auto state = std::make_unique<Numpy>();
    state->generic = py::object(np.attr("generic")).release().ptr();
    state->asarray = py::object(np.attr("asarray")).release().ptr();
    state->ascontiguousarray = py::object(np.attr("ascontiguousarray")).release().ptr();
    for (DataType t : AllDataTypes()) {
      if (auto text = NumpyTypeString(t)) {
        state->dtypes[static_cast<std::size_t>(t)] = py::dtype(*text).release().ptr();
      }
    }
    state->object_dtype = py::dtype("O").release().ptr();
    numpy = state.release();
    return Status::Ok();
  } catch (const py::error_already_set& e) {
    Status s = StatusFromPython(e, "importing numpy");
    return Status(StatusCode::kNotFound, s.message());
  }
}

std::optional<std::string> NumpyTypeString(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kFloat64:
      return "<f8";
    case DataType::kInt8:
      return "i1";
    case DataType::kInt16:
      return "<i2";
    case DataType::kInt32:
      return "<i4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kUint8:
      return "u1";
    case DataType::kUint16:
      return "<u2";
    case DataType::kUint32:
      return "<u4";
    case DataType::kUint64:
      return "<u8";
    case DataType::kString:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<py::object> TensorToPython(const Tensor& tensor, ArrayMode mode) {
  if (numpy == nullptr) return Internal("pybridge::Init() was not called");
  CARTON_RETURN_IF_ERROR(tensor.Validate());
  try {
    if (tensor.dtype == DataType::kString) return StringsToPython(tensor);
    return NumericToPython(tensor, mode);
  } catch (const py::error_already_set& e) {
    return StatusFromPython(e, "tensor \"" + tensor.name + "\"");
  }
}

Result<py::dict> TensorsToDict(const std::vector<Tensor>& tensors, ArrayMode mode) {
  py::dict out;
  for (const Tensor& t : tensors) {
    py::str key(t.name);
    if (out.contains(key)) return InvalidArgument("tensor \"" + t.name + "\" is given twice");
    CARTON_ASSIGN_OR_RETURN(py::object value, TensorToPython(t, mode));
    out[key] = std::move(value);
  }
  return out;
}

Result<Tensor> TensorFromPython(std::string name, py::handle value, std::optional<DataType> hint) {
  if (numpy == nullptr) return Internal("pybridge::Init() was not called");
  const std::string context = "tensor \"" + name + "\"";
  try {
    return Convert(std::move(name), value, hint);
  } catch (const py::error_already_set& e) {
    return StatusFromPython(e, context);
  } catch (const py::cast_error& e) {
    return InvalidArgument(context + ": " + e.what());
  }
}

Result<std::vector<Tensor>> TensorsFromMapping(py::handle mapping,
                                               const std::map<std::string, DataType>& hints) {
  if (numpy == nullptr) return Internal("pybridge::Init() was not called");
  std::vector<Tensor> out;
  try {
    if (!PyDict_Check(mapping.ptr()) && !py::hasattr(mapping, "items")) {
      return InvalidArgument("expected a dict of tensors, got a value of type " +
                             TypeName(mapping));
    }
    py::object items = mapping.attr("items")();
    for (py::handle item : py::iter(items)) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
      if (!PyUnicode_Check(pair[0].ptr())) {
        return InvalidArgument("a key of the dict of tensors has type " + TypeName(pair[0]) +
                               ", not str");
      }
      std::string name = pair[0].cast<std::string>();
      std::optional<DataType> hint;
      if (auto it = hints.find(name); it != hints.end()) hint = it->second;
      CARTON_ASSIGN_OR_RETURN(Tensor t, TensorFromPython(std::move(name), pair[1], hint));
      out.push_back(std::move(t));
    }
  } catch (const py::error_already_set& e) {
    return StatusFromPython(e, "reading the dict of tensors");
  } catch (const py::cast_error& e) {
    return InvalidArgument(std::string("reading the dict of tensors: ") + e.what());
  }
  return out;
}

}  // namespace carton::pybridge
