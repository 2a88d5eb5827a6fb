// SHA-256 (OpenSSL EVP underneath; SHA-NI where the CPU has it).
//
// Sha256 is a move-only streaming hasher. Digest is 32 bytes, printed as
// 64 lowercase hex digits. Thread-safety: one Sha256 per thread; the free
// functions are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::manifest {

using Digest = std::array<std::uint8_t, 32>;

// 64 lowercase hex digits.
std::string ToHex(const Digest& d);
// Parses exactly 64 lowercase hex digits; nullopt otherwise.
std::optional<Digest> ParseHex(std::string_view hex);

// "sha256:<64 hex>", a digest as OCI registries write it.
std::string DigestString(const Digest& d);
// Parses "sha256:<64 lowercase hex>" (untrusted text). Errors: kUnsupported
// for another algorithm, kInvalidArgument otherwise.
Result<Digest> ParseDigestString(std::string_view text);

class Sha256 {
 public:
  Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();

  void Update(ByteView data);
  // Returns the digest and resets the hasher for reuse.
  Digest Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Digest Sha256Of(ByteView data);

// Hashes a file by reading it through a mapping. Errors: kNotFound, kIoError.
Result<Digest> HashFile(const std::string& path);

}  // namespace carton::manifest
