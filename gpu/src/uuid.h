// The text form of a GPU's UUID, as nvidia-smi and CUDA_VISIBLE_DEVICES
// write it.
#pragma once

#include <string>

#include "driver.h"

namespace carton::gpu::internal {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase hex.
std::string UuidText(const CuUuid& uuid);

}  // namespace carton::gpu::internal
