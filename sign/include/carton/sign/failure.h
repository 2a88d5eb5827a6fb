// Why a signature check said no: the `detail` of the Status the sign
// functions return (common/status.h lets a module refine kCorrupt and
// kUnsupported with a number of its own), so a caller can tell a wrong key
// from a tampered file without reading the message.
//
// Every failure but kUnsupported is kCorrupt: the input does not hold up
// (the CLI's exit 1). Files that cannot be read are kNotFound or kIoError,
// with no detail.
#pragma once

#include <string_view>

#include "carton/common/status.h"

namespace carton::sign {

enum class Failure : int {
  kNone = 0,
  kBadBundle,           // the bundle breaks a rule of the format (the field is named)
  kUnsupported,         // valid, but not supported yet (shards, keyless, tlog entries)
  kBadSignature,        // the signature does not verify with the key that should have made it
  kUntrustedKey,        // signed by a key that is not among the trusted ones
  kBrokenChain,         // the certificate chain does not lead to a trusted root
  kExpiredCertificate,  // a certificate of the chain is not valid at the time of the check
  kWrongUsage,          // the leaf certificate is not for code signing
  kIdentityMismatch,    // the leaf names none of the identities asked for
  kTamperedFile,        // a file's digest is not the one signed
  kMissingFile,         // a signed file is not there
  kUnlistedFile,        // a file is there that the signature neither lists nor ignores
  kNotCovered,          // the signature lists other files than the carton's MANIFEST
  kUnsigned,            // no signature where one is required
};

// "bad bundle", "wrong key", ...: the failure's name in reports and JSON.
std::string_view FailureName(Failure failure);

// The failure a status carries (kNone for OK, and for a status of another
// kind: a file that cannot be read).
Failure FailureOf(const Status& status);

// A kCorrupt status (kUnsupported for Failure::kUnsupported) with `failure`
// as its detail.
Status SignFailure(Failure failure, std::string message);

}  // namespace carton::sign
