#include "device.h"

#include <string>

namespace carton::capi {

Result<loader::DeviceSpec> ParseDevice(const char* name) {
  if (name == nullptr) return loader::DeviceSpec();
  if (*name == '\0') {
    return InvalidArgument("device \"\": empty (" + std::string(loader::kDeviceForms) +
                           "; NULL for the default)");
  }
  return loader::ParseDeviceSpec(name);
}

}  // namespace carton::capi
