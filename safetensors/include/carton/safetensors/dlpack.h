// The DLPack ABI (specification v1.1): the C structs through which tensors
// pass between libraries without a copy (torch.from_dlpack, cupy.from_dlpack,
// jax.dlpack, numpy.from_dlpack).
//
// Declared here from the specification, with its names, so that nothing
// outside the project is needed to build; the layouts are the C ABI and are
// checked by static_asserts below. They live in carton::dlpack so that a
// program may also include the upstream dlpack.h: the two declare the same
// layouts, and a pointer to one may be passed where the other is expected
// (reinterpret_cast).
//
// Ownership (the specification's rule): a DLManagedTensor or
// DLManagedTensorVersioned is handed to exactly one consumer, which calls its
// `deleter` once, with the struct itself, when done; the deleter frees the
// struct and releases the producer's hold on the memory. What carton's
// producers hold is written where they are declared (load.h).
#pragma once

#include <cstdint>

namespace carton::dlpack {

// The version these declarations follow (1.1: the FP8/FP6/FP4 type codes and
// the IS_SUBBYTE_TYPE_PADDED flag).
inline constexpr std::uint32_t kDLPackMajorVersion = 1;
inline constexpr std::uint32_t kDLPackMinorVersion = 1;

struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};

// Where the memory is. Only the values carton produces, and the CUDA ones a
// consumer may meet, are listed; the enum is an int32 in the ABI.
enum DLDeviceType : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
};

struct DLDevice {
  DLDeviceType device_type;
  std::int32_t device_id;  // the ordinal (CUDA: the driver's); 0 for kDLCPU
};

// Kinds of element (DLDataType::code).
enum DLDataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17,
};

// One element: `code` (a DLDataTypeCode), `bits` per lane, `lanes` (1 for
// scalars). Sub-byte types are packed, little bit-endian, unless the
// versioned struct's IS_SUBBYTE_TYPE_PADDED flag says otherwise.
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

// A borrowed view: `data` + `byte_offset` is the first element; `shape` and
// `strides` (in elements, not bytes) have `ndim` entries each.
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};

// The classic (unversioned) managed tensor, which consumers before DLPack 1.0
// take.
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// DLManagedTensorVersioned::flags
inline constexpr std::uint64_t kDLPackFlagBitmaskReadOnly = 1ULL << 0;
inline constexpr std::uint64_t kDLPackFlagBitmaskIsCopied = 1ULL << 1;
inline constexpr std::uint64_t kDLPackFlagBitmaskIsSubbyteTypePadded = 1ULL << 2;

// The versioned managed tensor (DLPack 1.0 and later). A consumer whose major
// version differs must only call `deleter`.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

static_assert(sizeof(DLDevice) == 8);
static_assert(sizeof(DLDataType) == 4);
static_assert(sizeof(DLTensor) == 48);
static_assert(sizeof(DLManagedTensor) == 64);
static_assert(sizeof(DLManagedTensorVersioned) == 80);

}  // namespace carton::dlpack
