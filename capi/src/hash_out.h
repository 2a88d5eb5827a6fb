// Manifest hashes handed to C callers as 64 hex digits and a NUL.
#pragma once

#include <cstring>
#include <string>

#include "carton/c/carton.h"
#include "carton/manifest/sha256.h"

namespace carton::capi {

// Writes `digest` as hex into `out` (CARTON_HASH_HEX_SIZE bytes) unless
// `out` is NULL.
inline void WriteHash(const manifest::Digest& digest, char* out) {
  if (out == nullptr) return;
  const std::string hex = manifest::ToHex(digest);
  static_assert(CARTON_HASH_HEX_SIZE == 65);
  std::memcpy(out, hex.c_str(), CARTON_HASH_HEX_SIZE);
}

}  // namespace carton::capi
