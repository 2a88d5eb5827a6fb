// carton.safetensors' native core: a validated, mapped safetensors::File
// for safe_open (zero-copy numpy views whose base is the file object,
// pread copies for torch, numpy-style slices), and the reference's
// serialize / serialize_file / deserialize over safetensors::Serialize,
// WriteFile and File::FromBuffer. Every failure is SafetensorError (with
// `code` and `kind`, the ErrorKind of errors.h), but a file that is not
// there, which is FileNotFoundError as in the reference.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "carton/pybridge/errors.h"
#include "carton/pybridge/safetensors_numpy.h"
#include "carton/safetensors/errors.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/slice.h"
#include "carton/safetensors/writer.h"

namespace carton::python {
namespace {

namespace st = carton::safetensors;

PyObject* safetensor_error = nullptr;  // a strong reference, never released

std::string_view KindName(st::ErrorKind kind) {
  switch (kind) {
    case st::ErrorKind::kNone:
      return "";
    case st::ErrorKind::kFileTooSmall:
      return "file_too_small";
    case st::ErrorKind::kHeaderTooLarge:
      return "header_too_large";
    case st::ErrorKind::kHeaderPastEnd:
      return "header_past_end";
    case st::ErrorKind::kHeaderNotUtf8:
      return "header_not_utf8";
    case st::ErrorKind::kHeaderNoBrace:
      return "header_no_brace";
    case st::ErrorKind::kInvalidJson:
      return "invalid_json";
    case st::ErrorKind::kNotAnObject:
      return "not_an_object";
    case st::ErrorKind::kTrailingBytes:
      return "trailing_bytes";
    case st::ErrorKind::kDuplicateKey:
      return "duplicate_key";
    case st::ErrorKind::kTooDeep:
      return "too_deep";
    case st::ErrorKind::kMissingField:
      return "missing_field";
    case st::ErrorKind::kUnknownDtype:
      return "unknown_dtype";
    case st::ErrorKind::kInvalidShape:
      return "invalid_shape";
    case st::ErrorKind::kInvalidOffsets:
      return "invalid_offsets";
    case st::ErrorKind::kNumelOverflow:
      return "numel_overflow";
    case st::ErrorKind::kPartialByte:
      return "partial_byte";
    case st::ErrorKind::kSizeMismatch:
      return "size_mismatch";
    case st::ErrorKind::kDataGap:
      return "data_gap";
    case st::ErrorKind::kDataOverlap:
      return "data_overlap";
    case st::ErrorKind::kDataEndMismatch:
      return "data_end_mismatch";
    case st::ErrorKind::kInvalidMetadata:
      return "invalid_metadata";
  }
  return "";
}

[[noreturn]] void RaiseSafetensors(const Status& status) {
  py::dict attributes;
  const std::string_view kind = KindName(st::KindOf(status));
  attributes["kind"] = kind.empty() ? py::object(py::none()) : py::object(py::str(kind));
  py::handle type = safetensor_error ? py::handle(safetensor_error) : py::handle(PyExc_ValueError);
  pybridge::ThrowStatusAs(status, type, attributes);
}

// File::Open reports kNotFound when the file is not there, which the
// reference raises as FileNotFoundError.
[[noreturn]] void RaiseOpen(const Status& status) {
  if (status.code() == StatusCode::kNotFound) {
    pybridge::ThrowStatusAs(status, PyExc_FileNotFoundError);
  }
  RaiseSafetensors(status);
}

template <typename T>
T Take(Result<T> r) {
  if (!r.ok()) RaiseSafetensors(r.status());
  return std::move(r).value();
}

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// A Python buffer held for the life of this object (released with the GIL).
class Buffer {
 public:
  // Raises SafetensorError naming `what` when `object` has no C-contiguous
  // buffer.
  Buffer(py::handle object, const std::string& what, bool writable) {
    const int flags = writable ? (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) : PyBUF_C_CONTIGUOUS;
    if (PyObject_GetBuffer(object.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      RaiseSafetensors(InvalidArgument(what + ": a value of type " + TypeName(object) +
                                       " is not a " + (writable ? "writable " : "") +
                                       "C-contiguous buffer (bytes, bytearray, numpy array)"));
    }
    held_ = true;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  ByteView bytes() const {
    return {static_cast<const std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }
  MutableByteView mutable_bytes() const {
    return {static_cast<std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// Python slice indices: ints and slice objects, one per leading dimension
// (the Python layer expands `...`).
std::vector<st::SliceIndex> IndicesFromPython(const py::list& indices) {
  std::vector<st::SliceIndex> out;
  auto part = [](py::handle v) -> std::optional<std::int64_t> {
    if (v.is_none()) return std::nullopt;
    return py::cast<std::int64_t>(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())));
  };
  for (py::handle i : indices) {
    if (PySlice_Check(i.ptr())) {
      out.push_back(
          st::SliceIndex::Range(part(i.attr("start")), part(i.attr("stop")), part(i.attr("step"))));
    } else if (!PyBool_Check(i.ptr()) && PyIndex_Check(i.ptr())) {
      out.push_back(st::SliceIndex::At(*part(i)));
    } else {
      throw py::type_error("slice indices must be ints, slices or ..., not " + TypeName(i));
    }
  }
  return out;
}

std::vector<ssize_t> Dims(const std::vector<std::uint64_t>& shape) {
  return {shape.begin(), shape.end()};
}

class SafeFile {
 public:
  explicit SafeFile(st::File file, py::object keep = py::object())
      : file_(std::move(file)), keep_(std::move(keep)) {}

  static std::shared_ptr<SafeFile> Open(const std::string& path) {
    auto file = WithoutGil([&] { return st::File::Open(path); });
    if (!file.ok()) RaiseOpen(file.status());
    return std::make_shared<SafeFile>(std::move(file).value());
  }

  // Validates the buffer of `data` (bytes, bytearray, memoryview) in place;
  // the object is kept while the file lives.
  static std::shared_ptr<SafeFile> FromBuffer(py::object data) {
    auto buffer = std::make_shared<Buffer>(data, "data", false);
    ByteView bytes = buffer->bytes();
    auto file = WithoutGil([&] { return st::File::FromBuffer(bytes); });
    if (!file.ok()) RaiseSafetensors(file.status());
    auto out = std::make_shared<SafeFile>(std::move(file).value(), data);
    out->buffer_ = std::move(buffer);
    return out;
  }

  py::list Keys() const {
    py::list out;
    for (std::string_view name : file_.Names()) out.append(py::str(name.data(), name.size()));
    return out;
  }

  py::list OffsetKeys() const {
    py::list out;
    for (const auto& t : file_.tensors()) out.append(py::str(t.name.data(), t.name.size()));
    return out;
  }

  py::object Metadata() const {
    if (!file_.has_metadata()) return py::none();
    py::dict out;
    for (const auto& [k, v] : file_.metadata()) out[py::str(k)] = py::str(v);
    return out;
  }

  const st::TensorView& Get(const std::string& name) const {
    const st::TensorView* t = file_.Find(name);
    if (t == nullptr) {
      RaiseSafetensors(
          Status(StatusCode::kNotFound, file_.source() + ": no tensor named \"" + name + "\""));
    }
    return *t;
  }

  py::tuple Info(const std::string& name) const {
    const st::TensorView& t = Get(name);
    py::list shape;
    for (std::uint64_t d : t.shape) shape.append(d);
    return py::make_tuple(std::string(st::DtypeName(t.dtype)), shape,
                          py::make_tuple(t.data_offset, t.data_offset + t.data.size()));
  }

  void ReadInto(const std::string& name, py::handle out) const {
    const st::TensorView& t = Get(name);
    Buffer buffer(out, "out", true);
    MutableByteView dest = buffer.mutable_bytes();
    Status s = WithoutGil([&] { return file_.ReadInto(t, dest); });
    if (!s.ok()) RaiseSafetensors(s);
  }

  py::list SliceShape(const std::string& name, const py::list& indices) const {
    const st::TensorView& t = Get(name);
    auto index = IndicesFromPython(indices);
    st::SlicePlan plan = Take(st::PlanSlice(t, index));
    return py::cast(plan.shape);
  }

  py::array SliceNumpy(const std::string& name, const py::list& indices) const {
    const st::TensorView& t = Get(name);
    auto index = IndicesFromPython(indices);
    st::SlicePlan plan = Take(st::PlanSlice(t, index));
    auto type = pybridge::NumpyTypeString(t.dtype);
    if (!type) {
      RaiseSafetensors(Unsupported("tensor \"" + name + "\": dtype " +
                                   std::string(st::DtypeName(t.dtype)) +
                                   " has no numpy equivalent (use framework=\"pt\")"));
    }
    py::array out(py::dtype(*type), Dims(plan.shape));
    MutableByteView dest(static_cast<std::byte*>(out.mutable_data()), plan.byte_size);
    Status s = WithoutGil([&] { return st::ReadSliceInto(t, index, dest); });
    if (!s.ok()) RaiseSafetensors(s);
    return out;
  }

  void SliceInto(const std::string& name, const py::list& indices, py::handle out) const {
    const st::TensorView& t = Get(name);
    auto index = IndicesFromPython(indices);
    Buffer buffer(out, "out", true);
    MutableByteView dest = buffer.mutable_bytes();
    Status s = WithoutGil([&] { return st::ReadSliceInto(t, index, dest); });
    if (!s.ok()) RaiseSafetensors(s);
  }

  const st::File& file() const { return file_; }

 private:
  st::File file_;
  std::shared_ptr<Buffer> buffer_;  // FromBuffer: the bytes the file views
  py::object keep_;
};

// A read-only zero-copy array of tensor `name`, whose base is `self` (the
// SafetensorsFile, which owns the mapping).
py::array GetNumpy(py::object self, const std::string& name) {
  const SafeFile& f = self.cast<const SafeFile&>();
  auto array = pybridge::SafetensorsViewToNumpy(f.Get(name), self);
  if (!array.ok()) RaiseSafetensors(array.status());
  return std::move(array).value();
}

// The reference's tensor dict: {name: {"dtype": str, "shape": [int], "data":
// buffer}}, converted while the buffers are held.
struct Sources {
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<st::TensorSource> tensors;
  st::Metadata metadata;
  st::WriteOptions options;
};

void FillSources(Sources* out, const py::dict& tensor_dict, py::handle metadata) {
  for (auto [key, value] : tensor_dict) {
    if (!PyUnicode_Check(key.ptr())) {
      throw py::type_error("tensor names must be str, not " + TypeName(key));
    }
    const std::string name = py::cast<std::string>(key);
    if (!PyDict_Check(value.ptr())) {
      throw py::type_error("tensor \"" + name +
                           "\": expected a dict with dtype, shape and data, "
                           "not " +
                           TypeName(value));
    }
    py::dict d = py::reinterpret_borrow<py::dict>(value);
    for (const char* field : {"dtype", "shape", "data"}) {
      if (!d.contains(field)) {
        RaiseSafetensors(InvalidArgument("tensor \"" + name + "\": missing `" + field + "`"));
      }
    }
    const std::string dtype_name = py::cast<std::string>(py::str(d["dtype"]));
    auto dtype = pybridge::SafetensorsDtypeFromName(dtype_name);
    if (!dtype) {
      RaiseSafetensors(
          Unsupported("tensor \"" + name + "\": dtype " + dtype_name + " is not covered"));
    }
    st::TensorSource t;
    t.name = name;
    t.dtype = *dtype;
    for (py::handle dim : py::reinterpret_borrow<py::object>(d["shape"])) {
      const long long n =
          py::cast<long long>(py::reinterpret_steal<py::object>(PyNumber_Index(dim.ptr())));
      if (n < 0) {
        RaiseSafetensors(
            InvalidArgument("tensor \"" + name + "\": negative dimension " + std::to_string(n)));
      }
      t.shape.push_back(static_cast<std::uint64_t>(n));
    }
    out->buffers.push_back(std::make_unique<Buffer>(d["data"], "tensor \"" + name + "\"", false));
    t.bytes = out->buffers.back()->bytes();
    out->tensors.push_back(std::move(t));
  }
  if (!metadata.is_none()) {
    if (!PyDict_Check(metadata.ptr())) {
      throw py::type_error("metadata must be a dict of str to str, not " + TypeName(metadata));
    }
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(metadata)) {
      if (!PyUnicode_Check(k.ptr()) || !PyUnicode_Check(v.ptr())) {
        throw py::type_error("metadata must map str to str; got " + TypeName(k) + " to " +
                             TypeName(v));
      }
      out->metadata[py::cast<std::string>(k)] = py::cast<std::string>(v);
    }
    // An empty dict given is kept, as the reference writes it.
    out->options.keep_empty_metadata = true;
  }
}

py::bytes Serialize(const py::dict& tensor_dict, py::handle metadata) {
  Sources s;
  FillSources(&s, tensor_dict, metadata);
  auto bytes = WithoutGil([&] { return st::Serialize(s.tensors, s.metadata, s.options); });
  std::vector<std::byte> out = Take(std::move(bytes));
  return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
}

void SerializeFile(const py::dict& tensor_dict, const std::string& filename, py::handle metadata) {
  Sources s;
  FillSources(&s, tensor_dict, metadata);
  Status status =
      WithoutGil([&] { return st::WriteFile(filename, s.tensors, s.metadata, s.options); });
  if (!status.ok()) RaiseSafetensors(status);
}

// [(name, {"shape": [int], "dtype": "F32", "data": bytearray})] in data
// order: copies, as the reference returns them.
py::list Deserialize(py::object data) {
  std::shared_ptr<SafeFile> f = SafeFile::FromBuffer(std::move(data));
  py::list out;
  for (const st::TensorView& t : f->file().tensors()) {
    py::dict d;
    py::list shape;
    for (std::uint64_t dim : t.shape) shape.append(dim);
    d["shape"] = shape;
    d["dtype"] = std::string(st::DtypeName(t.dtype));
    d["data"] = py::reinterpret_steal<py::object>(PyByteArray_FromStringAndSize(
        reinterpret_cast<const char*>(t.data.data()), static_cast<Py_ssize_t>(t.data.size())));
    out.append(py::make_tuple(py::str(t.name.data(), t.name.size()), d));
  }
  return out;
}

void SetSafetensorError(py::handle type) {
  Py_XDECREF(safetensor_error);
  safetensor_error = type.inc_ref().ptr();
}

}  // namespace

void BindSafetensors(py::module_& m) {
  m.def("set_safetensor_error", &SetSafetensorError, py::arg("type"),
        "Registers the exception class the safetensors functions raise.");
  py::class_<SafeFile, std::shared_ptr<SafeFile>>(
      m, "SafetensorsFile", py::buffer_protocol(),
      "A validated safetensors file, mapped read-only; its buffer is the whole file. Arrays "
      "from get_numpy view the mapping and keep this object alive.")
      .def_static("open", &SafeFile::Open, py::arg("path"))
      .def_static("from_buffer", &SafeFile::FromBuffer, py::arg("data"))
      .def("keys", &SafeFile::Keys)
      .def("offset_keys", &SafeFile::OffsetKeys)
      .def("metadata", &SafeFile::Metadata)
      .def("info", &SafeFile::Info, py::arg("name"))
      .def("get_numpy", &GetNumpy, py::arg("name"))
      .def("read_into", &SafeFile::ReadInto, py::arg("name"), py::arg("out"))
      .def("slice_shape", &SafeFile::SliceShape, py::arg("name"), py::arg("indices"))
      .def("slice_numpy", &SafeFile::SliceNumpy, py::arg("name"), py::arg("indices"))
      .def("slice_into", &SafeFile::SliceInto, py::arg("name"), py::arg("indices"), py::arg("out"))
      .def_property_readonly("source", [](const SafeFile& f) { return f.file().source(); })
      .def_property_readonly("data_start", [](const SafeFile& f) { return f.file().data_start(); })
      .def("__len__", [](const SafeFile& f) { return f.file().size(); })
      .def_buffer([](SafeFile& f) {
        ByteView bytes = f.file().bytes();
        return py::buffer_info(const_cast<std::byte*>(bytes.data()), 1,
                               py::format_descriptor<std::uint8_t>::format(), 1,
                               {static_cast<ssize_t>(bytes.size())}, {ssize_t{1}}, true);
      });
  m.def("serialize", &Serialize, py::arg("tensor_dict"), py::arg("metadata") = py::none());
  m.def("serialize_file", &SerializeFile, py::arg("tensor_dict"), py::arg("filename"),
        py::arg("metadata") = py::none());
  m.def("deserialize", &Deserialize, py::arg("data"));
}

}  // namespace carton::python
