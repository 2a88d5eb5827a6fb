// Where a model runs: device specs as users write them, and the device a
// runner process is started on.
//
//   auto spec = carton::loader::ParseDeviceSpec("cuda:1");   // or "cpu", "1", "GPU-...", "MIG-..."
//   auto device = carton::loader::ResolveDevice(*spec);      // asks the CUDA driver for GPU 1
//   setenv("CUDA_VISIBLE_DEVICES", device->VisibleDevices().c_str(), 1);  // in the runner
//
// Accepted specs (kDeviceForms): `cpu`; a GPU's index as the driver counts
// them (`N` or `cuda:N`), resolved to that GPU's UUID through the driver
// (carton/gpu/gpu.h, libcuda.so.1 opened at run time); a GPU's UUID as
// nvidia-smi -L prints it (`GPU-<uuid>`), or a MIG instance's (`MIG-<uuid>`,
// or the older `MIG-GPU-<uuid>/<gi>/<ci>`), passed through as given (on a
// machine with a GPU: see ResolveDevice). No spec
// is the default, as the original implementation has it: the first GPU when
// the driver lists one, else the CPU.
//
// A runner is started with CUDA_VISIBLE_DEVICES naming its device alone (its
// UUID; the empty string for the CPU), so inside the runner a GPU is always
// cuda:0. A CUDA_VISIBLE_DEVICES of the caller's own is the driver's to
// honour in the caller (an index and the default count among the GPUs it
// leaves) and is replaced in the runner's environment.
//
// Thread-safety: free functions, safe from any thread; the driver is opened
// once per process (gpu.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::loader {

// The forms a device spec may take, for messages and help.
inline constexpr std::string_view kDeviceForms = "cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>";

// A device as asked for, before any driver is asked.
struct DeviceSpec {
  enum class Kind : std::uint8_t {
    kDefault,  // nothing asked: the first GPU when there is one, else the CPU
    kCpu,
    kIndex,  // a GPU by the driver's ordinal
    kUuid,   // a GPU or MIG instance by UUID
  };
  Kind kind = Kind::kDefault;
  int index = 0;     // kIndex
  std::string uuid;  // kUuid: "GPU-..." or "MIG-..."
  std::string text;  // as given ("cuda:1"); empty for kDefault
};

// Parses a device spec. Untrusted input. An empty spec is kDefault.
// Errors: kInvalidArgument "device \"<spec>\": not a device (cpu, N, cuda:N,
// GPU-<uuid> or MIG-<uuid>)", or naming what is wrong with a UUID.
Result<DeviceSpec> ParseDeviceSpec(std::string_view spec);

// The spec for a GPU index (Python's visible_device=1). Errors:
// kInvalidArgument for a negative index.
Result<DeviceSpec> DeviceSpecForIndex(std::int64_t index);

// The device a runner is started on.
struct Device {
  bool gpu = false;  // false: the CPU
  // A GPU: its UUID ("GPU-..." or "MIG-..."), its ordinal and name when the
  // driver listed it (-1 and "" for a UUID passed through).
  std::string uuid;
  int index = -1;
  std::string name;
  // True when the caller named the device; false for the default, which a
  // runner may set aside (a runner without GPU support runs on the CPU).
  bool requested = false;
  // Why the default is the CPU ("no GPU (no CUDA driver: cannot open
  // libcuda.so.1 ...)"), empty otherwise: for people who ask, not an error
  // (the CLI prints nothing: a machine without a GPU is no news).
  std::string note;

  // The value of CUDA_VISIBLE_DEVICES for a runner on this device: the
  // UUID, or "" for the CPU.
  std::string VisibleDevices() const { return gpu ? uuid : std::string(); }
  // "cpu" or the UUID: what a runner is told (`--device`).
  std::string Name() const { return gpu ? uuid : std::string("cpu"); }
  // "cpu", "cuda:1 (NVIDIA H200, GPU-...)" or "GPU-..." for messages.
  std::string Describe() const;
};

// Resolves `spec`. kCpu needs no driver. kIndex asks the driver.
// kDefault asks the driver and falls back to the CPU (with `note` set) when
// there is no driver or no GPU; it never fails. kUuid is passed through as
// given (the driver need not list it: a MIG instance, a GPU hidden by this
// process's CUDA_VISIBLE_DEVICES), but where the driver lists no GPU and
// CUDA_VISIBLE_DEVICES is unset here there is none to name: refused.
// Errors (kIndex, kUuid): kNotFound "device \"1\": no GPU (<why>)" without
// a driver or a GPU, and (kIndex) "device \"cuda:3\": no such GPU (2 found:
// 0 GPU-..., 1 GPU-...)"; kIoError when the driver fails a call.
Result<Device> ResolveDevice(const DeviceSpec& spec);

// Why gpu::ListGpus's error `listing` leaves no GPU to use, for a message
// that says "no GPU" itself: "no CUDA driver: cannot open libcuda.so.1
// (...)" or "the CUDA driver (libcuda.so.1) reports no CUDA-capable
// device".
std::string NoGpuReason(const Status& listing);

// The default device: ResolveDevice of a kDefault spec.
Device DefaultDevice();

// ParseDeviceSpec then ResolveDevice.
Result<Device> ResolveDevice(std::string_view spec);

// The device a runner is told it runs on (`--device NAME`): "cpu", or a
// GPU-/MIG- UUID; an index is refused (kInvalidArgument), for the caller
// resolves it before CUDA_VISIBLE_DEVICES hides the other GPUs. Never asks
// the driver (the runner sets CUDA_VISIBLE_DEVICES before anything starts
// it).
Result<Device> DeviceForRunner(std::string_view name, bool requested);

}  // namespace carton::loader
