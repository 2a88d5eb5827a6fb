// carton devices, and the --device of the commands that load a model: a
// thin shell over carton/loader/device.h and carton/gpu/gpu.h.
#include <iostream>

#include "carton/common/progress.h"
#include "carton/common/quote.h"
#include "carton/gpu/gpu.h"
#include "carton/loader/device.h"
#include "commands.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {

std::string CheckDeviceSpec(const std::string& spec) {
  auto parsed = loader::ParseDeviceSpec(spec);
  return parsed.ok() ? std::string() : parsed.status().message();
}

Result<loader::Device> ResolveCommandDevice(const std::string& spec) {
  // The default falls back to the CPU silently: on a machine without a GPU
  // that is no news, and `carton devices` says why there is none.
  return loader::ResolveDevice(spec);
}

int Devices(bool json) {
  auto gpus = gpu::ListGpus();
  if (!gpus.ok() && gpus.status().code() != StatusCode::kUnsupported) {
    return Fail("devices", gpus.status());
  }
  // No driver (or a driver that sees no GPU) is an answer: none listed.
  const std::string none =
      !gpus.ok() ? "no GPU: " + loader::NoGpuReason(gpus.status())
                 : (gpus->empty() ? std::string("no GPU: the CUDA driver lists none") : "");
  if (json) {
    Json list = Json::array();
    if (gpus.ok()) {
      for (const auto& g : *gpus) {
        list.push_back({{"index", g.index},
                        {"name", g.name},
                        {"uuid", g.uuid},
                        {"total_memory", g.total_memory}});
      }
    }
    Json j = JsonDocument();
    j["ok"] = true;
    j["driver"] = gpus.ok();
    j["gpus"] = std::move(list);
    if (!none.empty()) j["note"] = none;
    PrintJson(j);
    return kExitOk;
  }
  if (!none.empty()) {
    std::cerr << "carton devices: " << none << "\n";
    return kExitOk;
  }
  for (const auto& g : *gpus) {
    std::cout << g.index << "  " << ShowText(g.name) << "  " << g.uuid << "  "
              << HumanBytes(g.total_memory) << "\n";
  }
  return kExitOk;
}

}  // namespace carton::cli
