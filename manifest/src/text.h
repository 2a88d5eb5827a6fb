// Private helpers for MANIFEST text: UTF-8 checking and quoting untrusted
// strings for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "carton/common/quote.h"
#include "carton/common/utf8.h"

namespace carton::manifest::internal {

using carton::FindInvalidUtf8;

// `s` in double quotes, safe to print (carton::QuoteForMessage).
inline std::string Quote(std::string_view s) { return QuoteForMessage(s); }

}  // namespace carton::manifest::internal
