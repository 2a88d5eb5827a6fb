#include "safetensors_load.h"

#include <pybind11/stl.h>

#include <utility>

#include "carton/safetensors/dlpack.h"
#include "carton/safetensors/load.h"
#include "safetensors_binding.h"

namespace carton::python {
namespace {

namespace st = carton::safetensors;
namespace dl = carton::dlpack;

constexpr const char* kCapsuleName = "dltensor";

// A capsule nobody consumed still owns its tensor (the DLPack rule).
void DeleteUnusedCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsuleName) == 0) return;  // consumed: renamed
  auto* managed = static_cast<dl::DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

// Consumers older than DLPack 1.1 (torch 1.x, numpy 1.x) refuse the bool and
// FP8 codes; their one-byte elements travel as uint8 instead, and the Python
// layer views them as their type again. True when the dtype was changed.
bool AsBytesIfNew(dl::DLTensor* t) {
  const auto code = static_cast<dl::DLDataTypeCode>(t->dtype.code);
  const bool classic = code == dl::kDLInt || code == dl::kDLUInt || code == dl::kDLFloat ||
                       code == dl::kDLBfloat || code == dl::kDLComplex;
  if (classic || t->dtype.bits != 8 || t->dtype.lanes != 1) return false;
  t->dtype = {static_cast<std::uint8_t>(dl::kDLUInt), 8, 1};
  return true;
}

class LoadedFile {
 public:
  explicit LoadedFile(st::LoadedTensors tensors) : tensors_(std::move(tensors)) {}

  py::list Names() const {
    py::list out;
    for (const st::LoadedTensor& t : tensors_.tensors()) out.append(t.name);
    return out;
  }

  const st::LoadedTensor& Get(const std::string& name) const {
    const st::LoadedTensor* t = tensors_.Find(name);
    if (t == nullptr) {
      RaiseSafetensors(Status(StatusCode::kNotFound, "File does not contain tensor " + name));
    }
    return *t;
  }

  // (capsule, as_bytes): a "dltensor" capsule of tensor `name`, sharing the
  // allocation, and whether its dtype travels as uint8 (AsBytesIfNew).
  py::tuple DLPack(const std::string& name) const {
    if (st::DtypeBits(Get(name).dtype) < 8) {
      RaiseSafetensors(Unsupported("tensor \"" + name +
                                   "\": a sub-byte dtype cannot be handed out as DLPack here"));
    }
    dl::DLManagedTensor* managed = TakeSafetensors(tensors_.ToDLPack(name));
    const bool as_bytes = AsBytesIfNew(&managed->dl_tensor);
    PyObject* capsule = PyCapsule_New(managed, kCapsuleName, &DeleteUnusedCapsule);
    if (capsule == nullptr) {
      managed->deleter(managed);
      throw py::error_already_set();
    }
    return py::make_tuple(py::reinterpret_steal<py::object>(capsule), as_bytes);
  }

  // The tensor's bytes, copied to the host (for checks of a device load).
  py::bytes CopyToHost(const std::string& name) const {
    const st::LoadedTensor& t = Get(name);
    auto bytes = WithoutGil([&] { return tensors_.CopyToHost(t); });
    const std::vector<std::byte>& b = TakeSafetensors(std::move(bytes));
    return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
  }

  std::string Target() const { return tensors_.target().ToString(); }

 private:
  st::LoadedTensors tensors_;
};

// Options whose opener hands out `source` (a file already open) for the one
// path loaded; the default opener when `source` is null.
st::LoadOptions OptionsFor(std::shared_ptr<const RandomAccessSource> source) {
  st::LoadOptions options;
  if (source) {
    options.open =
        [source](const std::string&) -> Result<std::shared_ptr<const RandomAccessSource>> {
      return source;
    };
  }
  return options;
}

}  // namespace

Result<st::LoadedTensors> LoadHostSlice(const std::string& path,
                                        std::shared_ptr<const RandomAccessSource> source,
                                        const std::string& name,
                                        std::vector<st::SliceIndex> indices) {
  st::LoadRequest request;
  request.paths = {path};
  request.tensors = std::vector<st::TensorRequest>{{name, std::move(indices)}};
  return st::Load(request, st::Target::Host(), OptionsFor(std::move(source)));
}

py::object LoadTensors(const std::string& path, std::shared_ptr<const RandomAccessSource> source,
                       std::optional<std::vector<st::TensorRequest>> tensors,
                       std::optional<int> cuda_index) {
  st::LoadRequest request;
  request.paths = {path};
  request.tensors = std::move(tensors);
  const st::LoadOptions options = OptionsFor(std::move(source));
  const st::Target target = cuda_index ? st::Target::Cuda(*cuda_index) : st::Target::Host();
  auto loaded = WithoutGil([&] { return st::Load(request, target, options); });
  return py::cast(LoadedFile(TakeSafetensors(std::move(loaded))));
}

void BindSafetensorsLoad(py::module_& m) {
  py::class_<LoadedFile>(m, "LoadedFile",
                         "Tensors of a safetensors file loaded in one allocation (host or CUDA), "
                         "handed out as DLPack capsules that share it.")
      .def("names", &LoadedFile::Names)
      .def("dlpack", &LoadedFile::DLPack, py::arg("name"))
      .def("copy_to_host", &LoadedFile::CopyToHost, py::arg("name"))
      .def_property_readonly("target", &LoadedFile::Target);
}

}  // namespace carton::python
