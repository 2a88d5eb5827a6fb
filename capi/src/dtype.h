// carton_dtype <-> carton::DataType (the same values, checked at compile
// time in dtype.cc). Thread-safety: stateless.
#pragma once

#include <optional>

#include "carton/c/carton.h"
#include "carton/format/data_type.h"

namespace carton::capi {

// The DataType of a C dtype; nullopt for a value that is not a carton_dtype.
std::optional<DataType> FromCDtype(carton_dtype dtype);

inline carton_dtype ToCDtype(DataType dtype) { return static_cast<carton_dtype>(dtype); }

}  // namespace carton::capi
