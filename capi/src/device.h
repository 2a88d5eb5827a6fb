// Where a model runs: the one place that knows which devices exist. The
// library runs models on the CPU only; a device name is resolved here and
// nowhere else, so another device is wired in by adding it to Device and
// ResolveDevice, and passing it on in model.cc's Load.
// Thread-safety: stateless.
#pragma once

#include <cstdint>
#include <string_view>

#include "carton/common/status.h"

namespace carton::capi {

enum class Device : std::uint8_t {
  kCpu,
};

// "cpu" (or no name: `name` NULL) is kCpu. Errors: kUnsupported for any
// other name, "device \"<name>\": devices other than the CPU are not
// supported yet".
Result<Device> ResolveDevice(const char* name);

}  // namespace carton::capi
