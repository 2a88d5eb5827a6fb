// Private to sign/src: what PublicKey, PrivateKey and Certificate hold
// (keys.cc, key_file.cc, certificate.cc and verify.cc reach their OpenSSL
// objects through these).
#pragma once

#include <string>
#include <string_view>

#include "carton/sign/certificate.h"
#include "carton/sign/keys.h"
#include "openssl.h"

namespace carton::sign {

struct PublicKey::Impl {
  internal::PkeyPtr key;
  Curve curve = Curve::kP256;
  std::string pem;
  std::string hint;
};

struct PrivateKey::Impl {
  internal::PkeyPtr key;
};

struct Certificate::Impl {
  internal::X509Ptr x509;
};

namespace internal {

// A PublicKey over `key`: kUnsupported unless it is an EC key on P-256,
// P-384 or P-521 (`source` names it).
Result<PublicKey> MakePublicKey(PkeyPtr key, std::string_view source);
// The same for a private key.
Result<PrivateKey> MakePrivateKey(PkeyPtr key, std::string_view source);

}  // namespace internal
}  // namespace carton::sign
