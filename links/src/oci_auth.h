// Registry authentication pieces private to links/src (oci_client.cc):
// base64. The parsers of registry answers (challenges, token responses,
// error bodies) are declared in carton/links/oci.h.
#pragma once

#include <string>
#include <string_view>

#include "carton/common/status.h"
#include "carton/links/oci.h"

namespace carton::links::oci {

std::string Base64Encode(std::string_view bytes);
// Errors: kInvalidArgument.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace carton::links::oci
