// Private: quoting names and values in safetensors error messages.
#pragma once

#include <string>
#include <string_view>

#include "carton/common/quote.h"

namespace carton::safetensors::internal {

// `s` in double quotes, as messages show tensor names: tensor "w". Names
// come from untrusted headers: control bytes are escaped
// (carton::QuoteForMessage).
inline std::string Quote(std::string_view s) { return QuoteForMessage(s); }

}  // namespace carton::safetensors::internal
