// Private to sign/src: base64 for the bundle's binary fields. Decoding
// takes untrusted text as the protobuf JSON mapping writes and reads it:
// the standard or the URL-safe alphabet, with or without padding; anything
// else (whitespace, a bad length, non-zero trailing bits, padding in the
// middle) is refused, so one byte string has one accepted text per
// alphabet.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"

namespace carton::sign::internal {

// Standard alphabet, padded.
std::string Base64Encode(ByteView bytes);
// nullopt when `text` is not base64 by the rules above.
std::optional<std::vector<std::byte>> Base64Decode(std::string_view text);

}  // namespace carton::sign::internal
