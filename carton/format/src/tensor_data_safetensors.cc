// Conversions between a tensor_data/ folder and a safetensors file.

#include <string>
#include <vector>

#include "carton/common/mapped_file.h"
#include "carton/format/tensor_data.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/writer.h"
#include "tensor_data_internal.h"

namespace carton {

namespace {

// The carton dtype of a safetensors tensor; kUnsupported when it has none.
Result<DataType> CartonDtype(const std::string& safetensors_path, std::string_view name,
                             const safetensors::TensorView& t) {
  std::optional<DataType> dtype = FromSafetensorsDtype(t.dtype);
  if (!dtype) {
    return Unsupported(safetensors_path + ": tensor \"" + std::string(name) + "\": dtype " +
                       std::string(safetensors::DtypeName(t.dtype)) + " has no carton equivalent");
  }
  return *dtype;
}

}  // namespace

Status ImportSafetensors(const std::string& safetensors_path, const std::string& out_dir) {
  CARTON_ASSIGN_OR_RETURN(safetensors::File file, safetensors::File::Open(safetensors_path));
  // The views below borrow from `file`, which outlives the write.
  std::vector<format_internal::PlainTensorRef> refs;
  refs.reserve(file.size());
  for (std::string_view name : file.Names()) {
    const safetensors::TensorView* t = file.Find(name);
    CARTON_ASSIGN_OR_RETURN(DataType dtype, CartonDtype(safetensors_path, name, *t));
    refs.push_back({std::string(name), dtype, t->shape, t->data, {}});
  }
  return format_internal::WriteTensorRefs(out_dir, refs, {});
}

Result<TensorData> ReadSafetensorsTensors(const std::string& safetensors_path) {
  CARTON_ASSIGN_OR_RETURN(safetensors::File file, safetensors::File::Open(safetensors_path));
  TensorData out;
  out.tensors.reserve(file.size());
  for (std::string_view name : file.Names()) {
    const safetensors::TensorView* t = file.Find(name);
    CARTON_ASSIGN_OR_RETURN(DataType dtype, CartonDtype(safetensors_path, name, *t));
    TensorValue v;
    v.name = std::string(name);
    v.dtype = dtype;
    v.shape.assign(t->shape.begin(), t->shape.end());
    v.data.assign(t->data.begin(), t->data.end());
    out.tensors.push_back(std::move(v));
  }
  return out;
}

Status ExportSafetensors(const std::string& dir, const std::string& out_path) {
  CARTON_ASSIGN_OR_RETURN(TensorDataIndex index, ReadTensorDataIndex(dir));
  for (const TensorDataEntry& e : index.tensors) {
    if (e.nested() || *e.dtype == DataType::kString) {
      return Unsupported(dir + ": tensor \"" + e.name + "\" is a " +
                         (e.nested() ? "nested" : "string") +
                         " tensor, which safetensors cannot hold");
    }
  }
  // Each source borrows from its mapping; both live until the write ends.
  std::vector<MappedFile> files;
  std::vector<safetensors::TensorSource> sources;
  files.reserve(index.tensors.size());
  sources.reserve(index.tensors.size());
  for (const TensorDataEntry& e : index.tensors) {
    CARTON_ASSIGN_OR_RETURN(MappedFile f, format_internal::OpenTensorFile(dir, e));
    CARTON_RETURN_IF_ERROR(format_internal::CheckBinSize(e, f.size()));
    files.push_back(std::move(f));
    sources.push_back({e.name, *ToSafetensorsDtype(*e.dtype), e.shape, files.back().bytes(), {}});
  }
  return safetensors::WriteFile(out_path, sources);
}

}  // namespace carton
