// Registry authentication pieces private to oci/src (client.cc):
// base64. The parsers of registry answers (challenges, token responses,
// error bodies) are declared in carton/oci/client.h.
#pragma once

#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/oci/client.h"

namespace carton::oci {

std::string Base64Encode(std::string_view bytes);
// Errors: kInvalidArgument.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace carton::oci
