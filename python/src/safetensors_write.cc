// carton.safetensors' writer, with the reference's 0.8 signature:
// TensorSpec(*, dtype, shape, data_ptr, data_len) describes one tensor's
// contiguous little-endian bytes at a raw address, and serialize /
// serialize_file take {name: TensorSpec} (a dict of dicts, the form before
// 0.8, is a TypeError as in the reference). The caller keeps the memory
// alive and unchanged during the call, which is the reference's contract.
// The bytes are those of safetensors::Serialize / WriteFile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "carton/pybridge/safetensors_numpy.h"
#include "carton/safetensors/dtype.h"
#include "carton/safetensors/writer.h"
#include "safetensors_binding.h"

namespace carton::python {
namespace {

namespace st = carton::safetensors;

// The reference's list, in its order and words, for its error message.
constexpr const char* kSupportedDtypes =
    "bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64, "
    "bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, "
    "float4_e2m1fn_x2, complex64";

// torch's name for two F4 values packed in a byte.
constexpr std::string_view kPackedF4 = "float4_e2m1fn_x2";

std::uint64_t NonNegative(py::handle value) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  if (py::cast<py::int_>(index) < py::int_(0)) {
    PyErr_SetString(PyExc_OverflowError, "can't convert negative int to unsigned");
    throw py::error_already_set();
  }
  return py::cast<std::uint64_t>(index);
}

class TensorSpec {
 public:
  TensorSpec(const std::string& dtype, const py::iterable& shape, py::handle data_ptr,
             py::handle data_len) {
    auto parsed = pybridge::SafetensorsDtypeFromName(dtype);
    const bool packed_f4 = dtype == kPackedF4;
    if (!parsed && !packed_f4) {
      RaiseSafetensorsMessage("Unknown dtype \"" + dtype +
                              "\". Supported dtypes: " + kSupportedDtypes);
    }
    dtype_ = packed_f4 ? st::Dtype::kF4 : *parsed;
    for (py::handle dim : shape) shape_.push_back(NonNegative(dim));
    // The header holds the element count: a packed F4 storage shape has half
    // as many in its last dimension.
    if (packed_f4 && !shape_.empty()) shape_.back() *= 2;
    data_ptr_ = NonNegative(data_ptr);
    data_len_ = NonNegative(data_len);
  }

  std::string dtype() const { return std::string(st::DtypeName(dtype_)); }
  const std::vector<std::uint64_t>& shape() const { return shape_; }
  std::uint64_t data_ptr() const { return data_ptr_; }
  std::uint64_t data_len() const { return data_len_; }

  std::string Repr() const {
    std::string shape = "[";
    for (std::size_t i = 0; i < shape_.size(); ++i) {
      shape += (i ? ", " : "") + std::to_string(shape_[i]);
    }
    return "TensorSpec(dtype='" + dtype() + "', shape=" + shape +
           "], data_ptr=" + std::to_string(data_ptr_) + ", data_len=" + std::to_string(data_len_) +
           ")";
  }

  // The source the writer reads; borrows the caller's memory.
  st::TensorSource Source(const std::string& name) const {
    if (data_ptr_ == 0 && data_len_ != 0) {
      RaiseSafetensors(InvalidArgument("tensor \"" + name + "\": data_ptr is 0 for " +
                                       std::to_string(data_len_) + " bytes"));
    }
    st::TensorSource t;
    t.name = name;
    t.dtype = dtype_;
    t.shape = shape_;
    if (data_len_ != 0) {
      t.bytes = ByteView(reinterpret_cast<const std::byte*>(static_cast<std::uintptr_t>(data_ptr_)),
                         static_cast<std::size_t>(data_len_));
    }
    return t;
  }

 private:
  st::Dtype dtype_ = st::Dtype::kU8;
  std::vector<std::uint64_t> shape_;
  std::uint64_t data_ptr_ = 0;
  std::uint64_t data_len_ = 0;
};

struct Sources {
  std::vector<st::TensorSource> tensors;
  st::Metadata metadata;
  st::WriteOptions options;
};

void FillMetadata(Sources* out, py::handle metadata) {
  if (metadata.is_none()) return;
  if (!PyDict_Check(metadata.ptr())) {
    throw py::type_error("argument 'metadata': '" + TypeName(metadata) +
                         "' object cannot be converted to 'PyDict'");
  }
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(metadata)) {
    if (!PyUnicode_Check(k.ptr()) || !PyUnicode_Check(v.ptr())) {
      throw py::type_error("argument 'metadata': metadata must map str to str; got " + TypeName(k) +
                           " to " + TypeName(v));
    }
    out->metadata[py::cast<std::string>(k)] = py::cast<std::string>(v);
  }
  // An empty dict given is kept, as the reference writes it.
  out->options.keep_empty_metadata = true;
}

Sources FillSources(py::handle tensor_dict, py::handle metadata) {
  if (!PyDict_Check(tensor_dict.ptr())) {
    throw py::type_error("argument 'tensor_dict': '" + TypeName(tensor_dict) +
                         "' object cannot be converted to 'PyDict'");
  }
  Sources s;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(tensor_dict)) {
    if (!PyUnicode_Check(key.ptr())) {
      throw py::type_error("argument 'tensor_dict': tensor names must be str, not " +
                           TypeName(key));
    }
    const std::string name = py::cast<std::string>(key);
    if (!py::isinstance<TensorSpec>(value)) {
      throw py::type_error("argument 'tensor_dict': tensor \"" + name + "\": '" + TypeName(value) +
                           "' object cannot be converted to 'TensorSpec'");
    }
    s.tensors.push_back(value.cast<const TensorSpec&>().Source(name));
  }
  FillMetadata(&s, metadata);
  return s;
}

constexpr std::string_view kSerializing = "Error while serializing: ";

py::bytes Serialize(py::handle tensor_dict, py::handle metadata) {
  Sources s = FillSources(tensor_dict, metadata);
  auto bytes = WithoutGil([&] { return st::Serialize(s.tensors, s.metadata, s.options); });
  if (!bytes.ok()) RaiseSafetensors(bytes.status(), kSerializing);
  const std::vector<std::byte>& out = *bytes;
  return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
}

void SerializeFile(py::handle tensor_dict, const std::string& filename, py::handle metadata) {
  Sources s = FillSources(tensor_dict, metadata);
  Status status =
      WithoutGil([&] { return st::WriteFile(filename, s.tensors, s.metadata, s.options); });
  if (!status.ok()) RaiseSafetensors(status, kSerializing);
}

}  // namespace

void BindSafetensorsWrite(py::module_& m) {
  py::class_<TensorSpec>(m, "TensorSpec",
                         "One tensor for serialize / serialize_file: its dtype, shape and the "
                         "address and length of its contiguous little-endian bytes.")
      .def(py::init<const std::string&, const py::iterable&, py::handle, py::handle>(),
           py::kw_only(), py::arg("dtype"), py::arg("shape"), py::arg("data_ptr"),
           py::arg("data_len"))
      .def_property_readonly("dtype", &TensorSpec::dtype)
      .def_property_readonly("shape", &TensorSpec::shape)
      .def_property_readonly("data_ptr", &TensorSpec::data_ptr)
      .def_property_readonly("data_len", &TensorSpec::data_len)
      .def("__repr__", &TensorSpec::Repr);
  m.def("serialize", &Serialize, py::arg("tensor_dict"), py::arg("metadata") = py::none());
  m.def("serialize_file", &SerializeFile, py::arg("tensor_dict"), py::arg("filename"),
        py::arg("metadata") = py::none());
}

}  // namespace carton::python
