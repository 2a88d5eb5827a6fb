// Where a model runs, for the C API: carton_load_options_set_device's text
// is parsed here (by carton/loader/device.h, the one place that knows the
// forms) and resolved when the model loads.
// Thread-safety: stateless.
#pragma once

#include "carton/common/status.h"
#include "carton/loader/device.h"

namespace carton::capi {

// NULL is the default (the first GPU when there is one, else the CPU);
// otherwise a spec: cpu, N, cuda:N, GPU-<uuid> or MIG-<uuid>. Errors:
// kInvalidArgument naming the text and the forms accepted.
Result<loader::DeviceSpec> ParseDevice(const char* name);

}  // namespace carton::capi
