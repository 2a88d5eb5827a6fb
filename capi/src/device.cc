#include "device.h"

#include <string>

namespace carton::capi {

Result<Device> ResolveDevice(const char* name) {
  if (name == nullptr || std::string_view(name) == "cpu") return Device::kCpu;
  return Unsupported("device \"" + std::string(name) +
                     "\": devices other than the CPU are not supported yet");
}

}  // namespace carton::capi
