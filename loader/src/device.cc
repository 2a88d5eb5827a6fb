#include "carton/loader/device.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <vector>

#include "carton/common/quote.h"
#include "carton/gpu/gpu.h"

namespace carton::loader {
namespace {

// A canonical UUID: 8-4-4-4-12 hex digits.
bool IsUuid(std::string_view s) {
  constexpr std::size_t kLength = 36;
  if (s.size() != kLength) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = s[i];
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return false;
  }
  return true;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// A MIG instance's GPU or compute instance ID: a few digits (the driver
// numbers them from 0, a handful per GPU), never more than kMaxMigIdDigits,
// so that no spec is long enough to matter in an environment or a command
// line.
bool IsMigId(std::string_view s) {
  constexpr std::size_t kMaxMigIdDigits = 5;
  return s.size() <= kMaxMigIdDigits && IsDigits(s);
}

// "GPU-<uuid>", "MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>".
bool IsDeviceUuid(std::string_view s) {
  if (s.starts_with("GPU-")) return IsUuid(s.substr(4));
  if (!s.starts_with("MIG-")) return false;
  s.remove_prefix(4);
  if (!s.starts_with("GPU-")) return IsUuid(s);
  s.remove_prefix(4);
  const std::size_t slash = s.find('/');
  if (slash == std::string_view::npos || !IsUuid(s.substr(0, slash))) return false;
  std::string_view rest = s.substr(slash + 1);
  const std::size_t second = rest.find('/');
  return second != std::string_view::npos && IsMigId(rest.substr(0, second)) &&
         IsMigId(rest.substr(second + 1));
}

Status NotADevice(std::string_view spec, std::string_view why = {}) {
  return InvalidArgument("device " + QuoteForMessage(spec) + ": " +
                         (why.empty() ? std::string("not a device") : std::string(why)) + " (" +
                         std::string(kDeviceForms) + ")");
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Device FromGpu(const gpu::GpuInfo& g, bool requested) {
  Device d;
  d.gpu = true;
  d.uuid = g.uuid;
  d.index = g.index;
  d.name = g.name;
  d.requested = requested;
  return d;
}

// "2 found: 0 GPU-..., 1 GPU-...".
std::string ListFound(const std::vector<gpu::GpuInfo>& gpus) {
  std::string s = std::to_string(gpus.size()) + " found";
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    s += (i == 0 ? ": " : ", ") + std::to_string(gpus[i].index) + " " + gpus[i].uuid;
  }
  return s;
}

Result<Device> ResolveIndex(const DeviceSpec& spec) {
  const std::string what = "device " + QuoteForMessage(spec.text);
  auto gpus = gpu::ListGpus();
  if (!gpus.ok()) {
    if (gpus.status().code() == StatusCode::kUnsupported) {
      return NotFound(what + ": no GPU (" + NoGpuReason(gpus.status()) + ")");
    }
    return gpus.status().WithContext(what);
  }
  if (gpus->empty()) return NotFound(what + ": no GPU (the CUDA driver lists none)");
  for (const auto& g : *gpus) {
    if (g.index == spec.index) return FromGpu(g, /*requested=*/true);
  }
  return NotFound(what + ": no such GPU (" + ListFound(*gpus) + ")");
}

// A GPU or MIG instance by UUID, as given: the driver need not list it (a
// MIG instance, a GPU the caller's CUDA_VISIBLE_DEVICES hides).
Device UuidDevice(const DeviceSpec& spec) {
  Device d;
  d.gpu = true;
  d.uuid = spec.uuid;
  d.requested = true;
  return d;
}

// A UUID asked for on a machine where the driver lists no GPU names one that
// cannot be there, unless this process's own CUDA_VISIBLE_DEVICES (which the
// runner's replaces) is what hides them.
Result<Device> ResolveUuid(const DeviceSpec& spec) {
  if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr) return UuidDevice(spec);
  auto gpus = gpu::ListGpus();
  if (gpus.ok() && !gpus->empty()) return UuidDevice(spec);
  const std::string what = "device " + QuoteForMessage(spec.text);
  if (gpus.ok()) return NotFound(what + ": no GPU (the CUDA driver lists none)");
  if (gpus.status().code() != StatusCode::kUnsupported) return gpus.status().WithContext(what);
  return NotFound(what + ": no GPU (" + NoGpuReason(gpus.status()) + ")");
}

}  // namespace

std::string NoGpuReason(const Status& listing) {
  // The driver's "no device" error says "no GPU: " itself; the callers say
  // it once, for a missing driver too.
  constexpr std::string_view kNoGpu = "no GPU: ";
  std::string_view why = listing.message();
  if (why.starts_with(kNoGpu)) why.remove_prefix(kNoGpu.size());
  return std::string(why);
}

Device DefaultDevice() {
  Device cpu;
  auto gpus = gpu::ListGpus();
  if (gpus.ok() && !gpus->empty()) return FromGpu(gpus->front(), /*requested=*/false);
  cpu.note = "no GPU (" +
             (gpus.ok() ? std::string("the CUDA driver lists none") : NoGpuReason(gpus.status())) +
             ")";
  return cpu;
}

std::string Device::Describe() const {
  if (!gpu) return "cpu";
  if (index < 0) return uuid;
  return "cuda:" + std::to_string(index) + " (" + (name.empty() ? "" : name + ", ") + uuid + ")";
}

Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  DeviceSpec spec;
  spec.text = std::string(text);
  if (text.empty()) return spec;
  if (Lower(text) == "cpu") {
    spec.kind = DeviceSpec::Kind::kCpu;
    return spec;
  }
  std::string_view number = text;
  if (Lower(text.substr(0, 5)) == "cuda:") number.remove_prefix(5);
  if (IsDigits(number)) {
    int index = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), index);
    if (ec != std::errc() || end != number.data() + number.size()) {
      return NotADevice(text, "GPU index out of range");
    }
    spec.kind = DeviceSpec::Kind::kIndex;
    spec.index = index;
    return spec;
  }
  if (text.starts_with("GPU-") || text.starts_with("MIG-")) {
    if (!IsDeviceUuid(text)) {
      return NotADevice(text,
                        "not a GPU or MIG UUID as nvidia-smi -L prints them "
                        "(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
    }
    spec.kind = DeviceSpec::Kind::kUuid;
    spec.uuid = std::string(text);
    return spec;
  }
  return NotADevice(text);
}

Result<DeviceSpec> DeviceSpecForIndex(std::int64_t index) {
  if (index < 0 || index > std::numeric_limits<int>::max()) {
    return InvalidArgument("device " + std::to_string(index) + ": not a GPU index (" +
                           std::string(kDeviceForms) + ")");
  }
  DeviceSpec spec;
  spec.kind = DeviceSpec::Kind::kIndex;
  spec.index = static_cast<int>(index);
  spec.text = std::to_string(index);
  return spec;
}

Result<Device> ResolveDevice(const DeviceSpec& spec) {
  Device d;
  switch (spec.kind) {
    case DeviceSpec::Kind::kDefault:
      return DefaultDevice();
    case DeviceSpec::Kind::kCpu:
      d.requested = true;
      return d;
    case DeviceSpec::Kind::kUuid:
      return ResolveUuid(spec);
    case DeviceSpec::Kind::kIndex:
      return ResolveIndex(spec);
  }
  return Internal("device " + QuoteForMessage(spec.text) + ": unknown kind");
}

Result<Device> ResolveDevice(std::string_view spec) {
  CARTON_ASSIGN_OR_RETURN(DeviceSpec parsed, ParseDeviceSpec(spec));
  return ResolveDevice(parsed);
}

Result<Device> DeviceForRunner(std::string_view name, bool requested) {
  CARTON_ASSIGN_OR_RETURN(DeviceSpec spec, ParseDeviceSpec(name));
  if (spec.kind == DeviceSpec::Kind::kDefault) {
    return InvalidArgument("device \"\": empty (a runner takes cpu, GPU-<uuid> or MIG-<uuid>)");
  }
  if (spec.kind != DeviceSpec::Kind::kCpu && spec.kind != DeviceSpec::Kind::kUuid) {
    return InvalidArgument("device " + QuoteForMessage(name) +
                           ": a runner takes cpu or a GPU's UUID (GPU-<uuid> or MIG-<uuid>; "
                           "`carton devices` lists them), not an index");
  }
  // Never the driver: it would start with this process's CUDA_VISIBLE_DEVICES,
  // before the runner sets it to the device.
  Device device = spec.kind == DeviceSpec::Kind::kCpu ? Device() : UuidDevice(spec);
  device.requested = requested;
  return device;
}

}  // namespace carton::loader
