// DLPack export of loaded tensors: the dtype table, shape, strides in
// elements, byte_offset, device, the versioned struct's version and flags,
// and the deleter's ownership (the allocation outlives the LoadedTensors
// while an export lives, and is freed once, after the last one).
#include "carton/safetensors/dlpack.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "carton/safetensors/load.h"
#include "safetensors/load_testing.h"

using namespace carton;
using namespace carton::safetensors;
using namespace carton::safetensors::testing;
using namespace carton::dlpack;

namespace {

Result<LoadedTensors> LoadAll(const std::string& path, const Target& target) {
  LoadRequest request;
  request.paths = {path};
  return Load(request, target);
}

}  // namespace

TEST_CASE("dlpack: every safetensors dtype has its DLPack type", "[safetensors][dlpack]") {
  struct Want {
    std::uint8_t code, bits;
  };
  const std::map<Dtype, Want> want = {
      {Dtype::kBool, {kDLBool, 8}},
      {Dtype::kF4, {kDLFloat4_e2m1fn, 4}},
      {Dtype::kF6E2M3, {kDLFloat6_e2m3fn, 6}},
      {Dtype::kF6E3M2, {kDLFloat6_e3m2fn, 6}},
      {Dtype::kU8, {kDLUInt, 8}},
      {Dtype::kI8, {kDLInt, 8}},
      {Dtype::kF8E5M2, {kDLFloat8_e5m2, 8}},
      {Dtype::kF8E4M3, {kDLFloat8_e4m3fn, 8}},
      {Dtype::kF8E8M0, {kDLFloat8_e8m0fnu, 8}},
      {Dtype::kF8E4M3Fnuz, {kDLFloat8_e4m3fnuz, 8}},
      {Dtype::kF8E5M2Fnuz, {kDLFloat8_e5m2fnuz, 8}},
      {Dtype::kI16, {kDLInt, 16}},
      {Dtype::kU16, {kDLUInt, 16}},
      {Dtype::kF16, {kDLFloat, 16}},
      {Dtype::kBF16, {kDLBfloat, 16}},
      {Dtype::kI32, {kDLInt, 32}},
      {Dtype::kU32, {kDLUInt, 32}},
      {Dtype::kF32, {kDLFloat, 32}},
      {Dtype::kC64, {kDLComplex, 64}},
      {Dtype::kF64, {kDLFloat, 64}},
      {Dtype::kI64, {kDLInt, 64}},
      {Dtype::kU64, {kDLUInt, 64}},
  };
  REQUIRE(want.size() == AllDtypes().size());
  for (Dtype d : AllDtypes()) {
    INFO(DtypeName(d));
    const DLDataType t = DtypeToDLPack(d);
    CHECK(t.code == want.at(d).code);
    CHECK(t.bits == want.at(d).bits);
    CHECK(t.lanes == 1);
  }
}

TEST_CASE("dlpack: shape, strides, data and device of a host tensor", "[safetensors][dlpack]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 21);
  auto loaded = LoadAll(path, Target::Host());
  REQUIRE(loaded.ok());
  auto m = loaded->ToDLPack("cube");
  REQUIRE(m.ok());
  const DLTensor& t = (*m)->dl_tensor;
  CHECK(t.ndim == 3);
  CHECK(std::vector<std::int64_t>(t.shape, t.shape + 3) == std::vector<std::int64_t>{6, 10, 12});
  CHECK(std::vector<std::int64_t>(t.strides, t.strides + 3) ==
        std::vector<std::int64_t>{120, 12, 1});
  CHECK(t.byte_offset == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(t.data) == loaded->Find("cube")->address);
  CHECK(reinterpret_cast<std::uintptr_t>(t.data) % 256 == 0);
  CHECK(t.device.device_type == kDLCPU);
  CHECK(t.device.device_id == 0);
  CHECK(t.dtype.code == kDLBfloat);
  CHECK((*m)->manager_ctx != nullptr);
  (*m)->deleter(*m);
  auto scalar = loaded->ToDLPack("scalar");
  REQUIRE(scalar.ok());
  CHECK((*scalar)->dl_tensor.ndim == 0);
  (*scalar)->deleter(*scalar);
  auto missing = loaded->ToDLPack("nope");
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "no loaded tensor named \"nope\"");
}

TEST_CASE("dlpack: the versioned struct says 1.1 and read-only when asked",
          "[safetensors][dlpack]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 22);
  auto loaded = LoadAll(path, Target::Host());
  REQUIRE(loaded.ok());
  auto v = loaded->ToDLPackVersioned("matrix");
  REQUIRE(v.ok());
  CHECK((*v)->version.major == 1);
  CHECK((*v)->version.minor == 1);
  CHECK((*v)->flags == 0);
  CHECK((*v)->dl_tensor.ndim == 2);
  CHECK((*v)->dl_tensor.strides[0] == 48);
  (*v)->deleter(*v);
  auto ro = loaded->ToDLPackVersioned("matrix", {.read_only = true});
  REQUIRE(ro.ok());
  CHECK((*ro)->flags == kDLPackFlagBitmaskReadOnly);
  (*ro)->deleter(*ro);
}

TEST_CASE("dlpack: an export keeps the memory after the LoadedTensors is gone",
          "[safetensors][dlpack]") {
  TempDir dir;
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 23);
  DLManagedTensor* classic = nullptr;
  DLManagedTensorVersioned* versioned = nullptr;
  {
    auto loaded = LoadAll(path, Target::Host());
    REQUIRE(loaded.ok());
    classic = loaded->ToDLPack("U8").value();
    versioned = loaded->ToDLPackVersioned("U8").value();
  }
  // Read through both after the owner is gone (ASan sees a use after free).
  const std::vector<std::byte> expected = MappedBytes(path, "U8");
  CHECK(std::memcmp(classic->dl_tensor.data, expected.data(), expected.size()) == 0);
  classic->deleter(classic);
  CHECK(std::memcmp(versioned->dl_tensor.data, expected.data(), expected.size()) == 0);
  versioned->deleter(versioned);
}

TEST_CASE("dlpack: a GPU tensor is kDLCUDA and its memory is freed once, by the last deleter",
          "[safetensors][dlpack][gpu]") {
  TempDir dir;
  const std::string log = UseFakeCuda(dir);
  const std::string path = dir.file("every.safetensors");
  WriteEveryDtype(path, 24);
  DLManagedTensorVersioned* a = nullptr;
  DLManagedTensor* b = nullptr;
  {
    auto loaded = LoadAll(path, Target::Cuda(1));
    REQUIRE(loaded.ok());
    a = loaded->ToDLPackVersioned("F16").value();
    b = loaded->ToDLPack("F32").value();
    CHECK(a->dl_tensor.device.device_type == kDLCUDA);
    CHECK(a->dl_tensor.device.device_id == 1);
    CHECK(reinterpret_cast<std::uintptr_t>(b->dl_tensor.data) == loaded->Find("F32")->address);
  }
  CHECK(ReadDriverLog(log).free == 0);
  a->deleter(a);
  CHECK(ReadDriverLog(log).free == 0);
  b->deleter(b);
  const DriverLog after = ReadDriverLog(log);
  CHECK(after.alloc == 1);
  CHECK(after.free == 1);
  CHECK(after.hostalloc == after.hostfree);
}
