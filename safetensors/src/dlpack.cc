// DLPack export of loaded tensors (load.h). Each exported struct lives in a
// context that also holds its shape, strides and a share of the allocation;
// the deleter frees the context, and with the last share the allocation.
#include "carton/safetensors/dlpack.h"

#include <limits>
#include <memory>
#include <vector>

#include "carton/common/quote.h"
#include "carton/safetensors/load.h"
#include "load_target.h"

namespace carton::safetensors {

using namespace dlpack;

DLDataType DtypeToDLPack(Dtype dtype) {
  auto type = [&](DLDataTypeCode code) {
    return DLDataType{code, static_cast<std::uint8_t>(DtypeBits(dtype)), 1};
  };
  switch (dtype) {
    case Dtype::kBool:
      return type(kDLBool);
    case Dtype::kU8:
    case Dtype::kU16:
    case Dtype::kU32:
    case Dtype::kU64:
      return type(kDLUInt);
    case Dtype::kI8:
    case Dtype::kI16:
    case Dtype::kI32:
    case Dtype::kI64:
      return type(kDLInt);
    case Dtype::kF16:
    case Dtype::kF32:
    case Dtype::kF64:
      return type(kDLFloat);
    case Dtype::kBF16:
      return type(kDLBfloat);
    case Dtype::kC64:
      return type(kDLComplex);
    case Dtype::kF8E5M2:
      return type(kDLFloat8_e5m2);
    case Dtype::kF8E4M3:
      return type(kDLFloat8_e4m3fn);
    case Dtype::kF8E4M3Fnuz:
      return type(kDLFloat8_e4m3fnuz);
    case Dtype::kF8E5M2Fnuz:
      return type(kDLFloat8_e5m2fnuz);
    case Dtype::kF8E8M0:
      return type(kDLFloat8_e8m0fnu);
    case Dtype::kF6E2M3:
      return type(kDLFloat6_e2m3fn);
    case Dtype::kF6E3M2:
      return type(kDLFloat6_e3m2fn);
    case Dtype::kF4:
      return type(kDLFloat4_e2m1fn);
  }
  return type(kDLOpaqueHandle);
}

namespace {

template <typename Managed>
struct Export {
  std::shared_ptr<internal::LoadedMemory> memory;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  Managed managed{};
};

template <typename Managed>
void Delete(Managed* self) {
  std::unique_ptr<Export<Managed>> owned(static_cast<Export<Managed>*>(self->manager_ctx));
}

// Shape and C-order strides in elements, as DLPack's int64s.
Status FillShape(const LoadedTensor& t, std::vector<std::int64_t>* shape,
                 std::vector<std::int64_t>* strides) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  shape->resize(t.shape.size());
  strides->resize(t.shape.size());
  std::uint64_t stride = 1;
  for (std::size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] > kMax || stride > kMax) {
      return InvalidArgument("tensor " + QuoteForMessage(t.name) + ": shape " +
                             ShapeToString(t.shape) + " does not fit DLPack's 64-bit integers");
    }
    (*shape)[i] = static_cast<std::int64_t>(t.shape[i]);
    (*strides)[i] = static_cast<std::int64_t>(stride);
    // A dimension of 0 makes every stride moot; keep them small.
    if (!CheckedMul(stride, std::max<std::uint64_t>(t.shape[i], 1), &stride)) stride = kMax + 1;
  }
  return Status::Ok();
}

template <typename Managed>
Result<Managed*> MakeExport(const LoadedTensors& loaded, std::string_view name,
                            const std::shared_ptr<internal::LoadedMemory>& memory) {
  const LoadedTensor* t = loaded.Find(name);
  if (t == nullptr) return NotFound("no loaded tensor named " + QuoteForMessage(name));
  auto e = std::make_unique<Export<Managed>>();
  CARTON_RETURN_IF_ERROR(FillShape(*t, &e->shape, &e->strides));
  e->memory = memory;
  DLTensor& d = e->managed.dl_tensor;
  d.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(t->address));
  d.device = loaded.target().kind == Target::Kind::kHost
                 ? DLDevice{kDLCPU, 0}
                 : DLDevice{kDLCUDA, static_cast<std::int32_t>(loaded.target().index)};
  d.ndim = static_cast<std::int32_t>(t->shape.size());
  d.dtype = DtypeToDLPack(t->dtype);
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &Delete<Managed>;
  return &e.release()->managed;
}

}  // namespace

Result<DLManagedTensor*> LoadedTensors::ToDLPack(std::string_view name) const {
  return MakeExport<DLManagedTensor>(*this, name, memory_);
}

Result<DLManagedTensorVersioned*> LoadedTensors::ToDLPackVersioned(
    std::string_view name, const DLPackOptions& options) const {
  CARTON_ASSIGN_OR_RETURN(DLManagedTensorVersioned * m,
                          MakeExport<DLManagedTensorVersioned>(*this, name, memory_));
  m->version = {kDLPackMajorVersion, kDLPackMinorVersion};
  m->flags = options.read_only ? kDLPackFlagBitmaskReadOnly : 0;
  return m;
}

}  // namespace carton::safetensors
