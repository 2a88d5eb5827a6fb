// What model.cc shares with the other files that use a carton_model.
#pragma once

#include "carton/common/status.h"
#include "handles.h"

namespace carton::capi {

// kInvalidArgument "<function>: <location>: the model is closed".
Status ModelClosed(const char* function, const carton_model& model);

}  // namespace carton::capi
