#include "carton/safetensors/dtype.h"

#include <array>

#include "carton/common/bytes.h"

namespace carton::safetensors {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  unsigned bits;
  bool is_float;
};

// Enum order is also the reference writer's sort order (see FORMAT.md §Writing).
constexpr std::array<DtypeInfo, 22> kDtypes = {{
    {Dtype::kBool, "BOOL", 8, false},
    {Dtype::kF4, "F4", 4, true},
    {Dtype::kF6E2M3, "F6_E2M3", 6, true},
    {Dtype::kF6E3M2, "F6_E3M2", 6, true},
    {Dtype::kU8, "U8", 8, false},
    {Dtype::kI8, "I8", 8, false},
    {Dtype::kF8E5M2, "F8_E5M2", 8, true},
    {Dtype::kF8E4M3, "F8_E4M3", 8, true},
    {Dtype::kF8E8M0, "F8_E8M0", 8, true},
    {Dtype::kF8E4M3Fnuz, "F8_E4M3FNUZ", 8, true},
    {Dtype::kF8E5M2Fnuz, "F8_E5M2FNUZ", 8, true},
    {Dtype::kI16, "I16", 16, false},
    {Dtype::kU16, "U16", 16, false},
    {Dtype::kF16, "F16", 16, true},
    {Dtype::kBF16, "BF16", 16, true},
    {Dtype::kI32, "I32", 32, false},
    {Dtype::kU32, "U32", 32, false},
    {Dtype::kF32, "F32", 32, true},
    {Dtype::kC64, "C64", 64, true},
    {Dtype::kF64, "F64", 64, true},
    {Dtype::kI64, "I64", 64, false},
    {Dtype::kU64, "U64", 64, false},
}};

constexpr std::array<Dtype, kDtypes.size()> MakeAll() {
  std::array<Dtype, kDtypes.size()> all{};
  for (std::size_t i = 0; i < kDtypes.size(); ++i) all[i] = kDtypes[i].dtype;
  return all;
}
constexpr std::array<Dtype, kDtypes.size()> kAll = MakeAll();

const DtypeInfo& Info(Dtype d) { return kDtypes[static_cast<std::size_t>(d)]; }

}  // namespace

std::span<const Dtype> AllDtypes() { return kAll; }
std::string_view DtypeName(Dtype dtype) { return Info(dtype).name; }
unsigned DtypeBits(Dtype dtype) { return Info(dtype).bits; }
bool IsFloat(Dtype dtype) { return Info(dtype).is_float; }

std::optional<Dtype> ParseDtype(std::string_view name) {
  for (const auto& info : kDtypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> ByteSize(Dtype dtype, std::uint64_t numel) {
  std::uint64_t bits;
  if (!CheckedMul(numel, DtypeBits(dtype), &bits)) return std::nullopt;
  if (bits % 8 != 0) return std::nullopt;
  return bits / 8;
}

}  // namespace carton::safetensors
