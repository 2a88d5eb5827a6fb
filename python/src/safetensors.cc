// carton.safetensors' native core: a validated safetensors::File for
// safe_open, opened with backend "mmap" (File::Open: mapped, zero-copy numpy
// views whose base is the file object) or "pread" (File::OpenSource over a
// descriptor read with pread(2), never mapped), read into arrays and
// tensors the Python layer allocates, numpy-style slices and one list index
// (safetensors_slice.h), and the reference's deserialize over
// File::FromBuffer. The writer is in safetensors_write.cc. Every failure is
// SafetensorError (with `code` and `kind`, the ErrorKind of errors.h), but
// a file that is not there, which is FileNotFoundError as in the reference.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/pread_file.h"
#include "carton/pybridge/errors.h"
#include "carton/pybridge/safetensors_numpy.h"
#include "carton/safetensors/errors.h"
#include "carton/safetensors/file.h"
#include "safetensors_binding.h"
#include "safetensors_load.h"
#include "safetensors_slice.h"

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

std::vector<ssize_t> Dims(const std::vector<std::uint64_t>& shape) {
  return {shape.begin(), shape.end()};
}

// The reference's prefix for a file that breaks the format; other failures
// (a directory, a read error) keep their own words.
constexpr std::string_view kDeserializingHeader = "Error while deserializing header: ";

[[noreturn]] void RaiseOpen(const std::string& path, const Status& status) {
  if (status.code() == StatusCode::kNotFound) {
    // The reference's words, exactly.
    PyErr_SetString(PyExc_FileNotFoundError, ("No such file or directory: " + path).c_str());
    throw py::error_already_set();
  }
  const bool format =
      status.code() == StatusCode::kCorrupt || status.code() == StatusCode::kUnsupported;
  RaiseSafetensors(status, format ? kDeserializingHeader : std::string_view());
}

class SafeFile {
 public:
  explicit SafeFile(st::File file, py::object keep = py::object())
      : file_(std::move(file)), keep_(std::move(keep)) {}

  // backend "mmap": File::Open; "pread": File::OpenSource over a descriptor
  // read with pread(2), so nothing of the file is mapped.
  static std::shared_ptr<SafeFile> Open(const std::string& path, const std::string& backend) {
    if (backend != "mmap" && backend != "pread") {
      RaiseSafetensorsMessage("backend \"" + backend +
                              "\" is invalid (expected one of: \"mmap\", \"pread\")");
    }
    std::shared_ptr<const RandomAccessSource> source;
    auto file = WithoutGil([&]() -> Result<st::File> {
      if (backend == "mmap") return st::File::Open(path);
      CARTON_ASSIGN_OR_RETURN(source, PreadFile::Open(path));
      return st::File::OpenSource(source);
    });
    if (!file.ok()) RaiseOpen(path, file.status());
    auto out = std::make_shared<SafeFile>(std::move(file).value());
    out->path_ = path;
    out->source_ = std::move(source);
    return out;
  }

  // Tensors `names` (all when nullopt) loaded in one pass (safetensors::Load)
  // into host memory or CUDA device `cuda_index`: a LoadedFile. A pread file
  // is read through its open descriptor; a mapped one by its path.
  py::object Load(const std::optional<std::vector<std::string>>& names,
                  std::optional<int> cuda_index) const {
    std::optional<std::vector<st::TensorRequest>> requests;
    if (names) {
      requests.emplace();
      for (const std::string& name : *names) requests->push_back({name, {}});
    }
    return LoadTensors(LoadPath(), source_, std::move(requests), cuda_index);
  }

  // The selection `indices` (ints and slices, no list) of tensor `name`
  // loaded alone: only its bytes are read (Load refuses negative steps).
  py::object LoadSlice(const std::string& name, const py::list& indices,
                       std::optional<int> cuda_index) const {
    Get(name);  // the reference's error for a missing tensor, before any load
    Selection selection = SelectionFromPython(indices);
    if (selection.list) RaiseSafetensorsMessage("a list index cannot be loaded, only read");
    std::vector<st::TensorRequest> requests{{name, std::move(selection.indices)}};
    return LoadTensors(LoadPath(), source_, std::move(requests), cuda_index);
  }

  // Validates the buffer of `data` (bytes, bytearray, memoryview) in place;
  // the object is kept while the file lives.
  static std::shared_ptr<SafeFile> FromBuffer(py::object data, std::string_view prefix = {}) {
    auto buffer = std::make_shared<Buffer>(data, "data", false);
    ByteView bytes = buffer->bytes();
    auto file = WithoutGil([&] { return st::File::FromBuffer(bytes); });
    if (!file.ok()) RaiseSafetensors(file.status(), prefix);
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

  // The reference's words for a missing tensor.
  const st::TensorView& Get(const std::string& name) const {
    const st::TensorView* t = file_.Find(name);
    if (t == nullptr) {
      RaiseSafetensors(Status(StatusCode::kNotFound, "File does not contain tensor " + name));
    }
    return *t;
  }

  py::tuple Info(const std::string& name) const {
    const st::TensorView& t = Get(name);
    py::list shape;
    for (std::uint64_t d : t.shape) shape.append(d);
    const std::uint64_t size = t.byte_size();
    return py::make_tuple(std::string(st::DtypeName(t.dtype)), shape,
                          py::make_tuple(t.data_offset, t.data_offset + size));
  }

  // Reads tensor `name` into the writable buffer `out` (pread for both
  // backends: the bytes are copied anyway).
  void ReadInto(const std::string& name, py::handle out) const {
    const st::TensorView& t = Get(name);
    Buffer buffer(out, "out", true);
    MutableByteView dest = buffer.mutable_bytes();
    Status s = WithoutGil([&] { return file_.ReadInto(t, dest); });
    if (!s.ok()) RaiseSafetensors(s);
  }

  // A new numpy array holding tensor `name`, read with ReadInto.
  py::array ReadNumpy(const std::string& name) const {
    const st::TensorView& t = Get(name);
    auto type = pybridge::NumpyTypeString(t.dtype);
    if (!type) {
      RaiseSafetensors(Unsupported("tensor \"" + name + "\": dtype " +
                                   std::string(st::DtypeName(t.dtype)) +
                                   " has no numpy equivalent (use framework=\"pt\")"));
    }
    std::vector<std::uint64_t> shape(t.shape.begin(), t.shape.end());
    py::array out(py::dtype(*type), Dims(shape));
    MutableByteView dest(static_cast<std::byte*>(out.mutable_data()), t.byte_size());
    Status s = WithoutGil([&] { return file_.ReadInto(t, dest); });
    if (!s.ok()) RaiseSafetensors(s);
    return out;
  }

  // The selection `indices` of tensor `name`: allocate(shape) returns
  // (result, writable buffer of the output's size), which is filled and
  // the result returned.
  py::object ReadSlice(const std::string& name, const py::list& indices,
                       const py::function& allocate) const {
    const st::TensorView& t = Get(name);
    const Selection selection = SelectionFromPython(indices);
    if (!file_.data_in_memory() && Forward(selection)) {
      if (auto out = LoadSliceWith(name, selection, allocate)) return *out;
    }
    std::vector<std::byte> held;
    const st::TensorView view = InMemory(t, &held);
    const std::vector<std::uint64_t> shape = TakeSafetensors(SelectionShape(view, selection));
    py::tuple made = allocate(py::cast(shape));
    py::object result = made[0];
    Buffer buffer(made[1], "out", true);
    MutableByteView dest = buffer.mutable_bytes();
    Status s = WithoutGil([&] { return ReadSelection(view, selection, dest); });
    if (!s.ok()) RaiseSafetensors(s);
    return result;
  }

  const st::File& file() const { return file_; }

 private:
  // Whether safetensors::Load reads `selection`: no list, no negative step.
  static bool Forward(const Selection& selection) {
    if (selection.list) return false;
    for (const st::SliceIndex& i : selection.indices) {
      if (i.kind == st::SliceIndex::Kind::kRange && i.step && *i.step < 0) return false;
    }
    return true;
  }

  // ReadSlice of a pread file: only the selection's bytes are read (Load to
  // host), then copied into what `allocate` gives. nullopt when Load cannot
  // read this slice (kUnsupported: too many separate runs), which the caller
  // then reads whole.
  std::optional<py::object> LoadSliceWith(const std::string& name, const Selection& selection,
                                          const py::function& allocate) const {
    const std::string& path = LoadPath();
    auto loaded = WithoutGil([&] { return LoadHostSlice(path, source_, name, selection.indices); });
    if (!loaded.ok() && loaded.status().code() == StatusCode::kUnsupported) return std::nullopt;
    const st::LoadedTensors tensors = TakeSafetensors(std::move(loaded));
    const st::LoadedTensor& t = tensors.tensors().front();
    py::tuple made = allocate(py::cast(t.shape));
    py::object result = made[0];
    Buffer buffer(made[1], "out", true);
    ByteView bytes = tensors.HostBytes(t);
    if (buffer.bytes().size() != bytes.size()) {
      RaiseSafetensors(Internal("slice of \"" + name + "\": " + std::to_string(bytes.size()) +
                                " bytes loaded for " + std::to_string(buffer.bytes().size())));
    }
    if (!bytes.empty()) std::memcpy(buffer.mutable_bytes().data(), bytes.data(), bytes.size());
    return result;
  }

  // `t` with its bytes in memory: the mapping's, or (pread) read whole into
  // `held`.
  st::TensorView InMemory(const st::TensorView& t, std::vector<std::byte>* held) const {
    if (file_.data_in_memory()) return t;
    held->resize(t.byte_size());
    Status s = WithoutGil([&] { return file_.ReadInto(t, *held); });
    if (!s.ok()) RaiseSafetensors(s);
    st::TensorView view = t;
    view.data = *held;
    return view;
  }

  const std::string& LoadPath() const {
    if (path_.empty()) RaiseSafetensorsMessage("only a file opened by path can be loaded");
    return path_;
  }

  st::File file_;
  std::string path_;                                  // Open: the path given
  std::shared_ptr<const RandomAccessSource> source_;  // backend "pread": what file_ reads
  std::shared_ptr<Buffer> buffer_;                    // FromBuffer: the bytes the file views
  py::object keep_;
};

// A read-only zero-copy array of tensor `name`, whose base is `self` (the
// SafetensorsFile, which owns the mapping). Files opened with
// backend="pread" have no mapping to view.
py::array GetNumpy(py::object self, const std::string& name) {
  const SafeFile& f = self.cast<const SafeFile&>();
  if (!f.file().data_in_memory()) {
    RaiseSafetensorsMessage("zero-copy arrays need backend=\"mmap\": " + f.file().source() +
                            " was opened with backend=\"pread\"");
  }
  auto array = pybridge::SafetensorsViewToNumpy(f.Get(name), self);
  if (!array.ok()) RaiseSafetensors(array.status());
  return std::move(array).value();
}

// [(name, {"shape": [int], "dtype": "F32", "data": bytearray})] in data
// order: copies, as the reference returns them.
py::list Deserialize(py::object data) {
  std::shared_ptr<SafeFile> f =
      SafeFile::FromBuffer(std::move(data), "Error while deserializing: ");
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

void RaiseSafetensors(const Status& status, std::string_view prefix) {
  py::dict attributes;
  const std::string_view kind = KindName(st::KindOf(status));
  attributes["kind"] = kind.empty() ? py::object(py::none()) : py::object(py::str(kind));
  py::handle type = safetensor_error ? py::handle(safetensor_error) : py::handle(PyExc_ValueError);
  if (prefix.empty()) pybridge::ThrowStatusAs(status, type, attributes);
  pybridge::ThrowStatusAs(
      Status(status.code(), std::string(prefix) + status.message(), status.detail()), type,
      attributes);
}

void RaiseSafetensorsMessage(const std::string& message) {
  RaiseSafetensors(InvalidArgument(message));
}

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

Buffer::Buffer(py::handle object, const std::string& what, bool writable) {
  const int flags = writable ? (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) : PyBUF_C_CONTIGUOUS;
  if (PyObject_GetBuffer(object.ptr(), &view_, flags) != 0) {
    PyErr_Clear();
    RaiseSafetensors(InvalidArgument(what + ": a value of type " + TypeName(object) + " is not a " +
                                     (writable ? "writable " : "") +
                                     "C-contiguous buffer (bytes, bytearray, numpy array)"));
  }
  held_ = true;
}

Buffer::~Buffer() {
  if (held_) PyBuffer_Release(&view_);
}

void BindSafetensors(py::module_& m) {
  m.def("set_safetensor_error", &SetSafetensorError, py::arg("type"),
        "Registers the exception class the safetensors functions raise.");
  py::class_<SafeFile, std::shared_ptr<SafeFile>>(
      m, "SafetensorsFile", py::buffer_protocol(),
      "A validated safetensors file, mapped read-only (backend \"mmap\": its buffer is the whole "
      "file; arrays from get_numpy view the mapping and keep this object alive) or read with "
      "pread (backend \"pread\": no buffer).")
      .def_static("open", &SafeFile::Open, py::arg("path"), py::arg("backend") = "mmap")
      .def_static(
          "from_buffer", [](py::object data) { return SafeFile::FromBuffer(std::move(data)); },
          py::arg("data"))
      .def("keys", &SafeFile::Keys)
      .def("offset_keys", &SafeFile::OffsetKeys)
      .def("metadata", &SafeFile::Metadata)
      .def("info", &SafeFile::Info, py::arg("name"))
      .def("get_numpy", &GetNumpy, py::arg("name"))
      .def("read_numpy", &SafeFile::ReadNumpy, py::arg("name"))
      .def("read_into", &SafeFile::ReadInto, py::arg("name"), py::arg("out"))
      .def("read_slice", &SafeFile::ReadSlice, py::arg("name"), py::arg("indices"),
           py::arg("allocate"))
      .def("load", &SafeFile::Load, py::arg("names") = py::none(),
           py::arg("cuda_index") = py::none())
      .def("load_slice", &SafeFile::LoadSlice, py::arg("name"), py::arg("indices"),
           py::arg("cuda_index") = py::none())
      .def_property_readonly("mapped", [](const SafeFile& f) { return f.file().data_in_memory(); })
      .def_property_readonly("source", [](const SafeFile& f) { return f.file().source(); })
      .def_property_readonly("data_start", [](const SafeFile& f) { return f.file().data_start(); })
      .def("__len__", [](const SafeFile& f) { return f.file().size(); })
      .def_buffer([](SafeFile& f) {
        ByteView bytes = f.file().bytes();
        return py::buffer_info(const_cast<std::byte*>(bytes.data()), 1,
                               py::format_descriptor<std::uint8_t>::format(), 1,
                               {static_cast<ssize_t>(bytes.size())}, {ssize_t{1}}, true);
      });
  m.def("deserialize", &Deserialize, py::arg("data"));
  BindSafetensorsWrite(m);
  BindSafetensorsLoad(m);
}

}  // namespace carton::python
