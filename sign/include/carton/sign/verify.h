// Checking an OMS bundle's signature against trusted keys or CA roots
// (sign/FORMAT.md "Verifying"), and saying who signed.
//
// VerifyBundle checks what the bundle itself proves: the signature over
// the payload, made by a trusted key (key method) or by a leaf certificate
// whose chain leads to a trusted root at the time of the check, for code
// signing, naming an identity asked for (certificate method). The files
// the statement lists are checked by files.h against what is there.
// Thread-safe; TrustedSigners is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/status.h"
#include "carton/sign/bundle.h"
#include "carton/sign/certificate.h"
#include "carton/sign/keys.h"

namespace carton::sign {

struct TrustedSigners {
  // Key method: the public keys a bundle may be signed with.
  std::vector<PublicKey> keys;
  // Certificate method: the CA roots a chain must end in.
  std::vector<Certificate> roots;
  // Certificate method: when not empty, the leaf must name one of these
  // (an email, URI or DNS name of its subject alternative names, its
  // subject as Certificate::subject(), or a common name of it).
  std::vector<std::string> identities;
  // The time certificates are checked at, in seconds since 1970; nullopt:
  // now.
  std::optional<std::int64_t> at_time;

  bool empty() const { return keys.empty() && roots.empty(); }
};

// Who signed, once the signature verified.
struct SignerInfo {
  Method method = Method::kKey;
  // Key method: the hint of the trusted key that verified (64 hex digits).
  std::string key_hint;
  // Certificate method: the leaf's subject (Certificate::subject()).
  std::string subject;
  // "key 5f3a...": "key <hint>" or the subject, for messages.
  std::string Describe() const;
};

// Checks `bundle` (as ParseBundle returned it) against `trusted`.
// Key method: the trusted key whose hint is the bundle's (or whose DER is
// its rawBytes) must verify the signature over Pae(payload); with no such
// key, every trusted key is tried. Certificate method: the leaf's key must
// verify the signature, the chain (the bundle's intermediates) must lead to
// one of `trusted.roots` with every certificate valid at the time of the
// check, the leaf must allow code signing and, when asked, name an
// identity. Errors: kCorrupt with the Failure detail: kUntrustedKey (no
// trusted key verifies: "signed by key <hint>, which is not a trusted key
// (trusted: <hints>)"; also a certificate bundle checked against keys
// only, and a key bundle against roots only), kBadSignature (the key the
// hint names does not verify it: the payload or signature was changed),
// kBrokenChain, kExpiredCertificate, kWrongUsage, kIdentityMismatch;
// kInvalidArgument when `trusted` is empty.
Result<SignerInfo> VerifyBundle(const Bundle& bundle, const TrustedSigners& trusted);

}  // namespace carton::sign
