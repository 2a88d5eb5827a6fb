#include "carton/sign/failure.h"

namespace carton::sign {

std::string_view FailureName(Failure failure) {
  switch (failure) {
    case Failure::kNone:
      return "none";
    case Failure::kBadBundle:
      return "bad bundle";
    case Failure::kUnsupported:
      return "unsupported";
    case Failure::kBadSignature:
      return "bad signature";
    case Failure::kUntrustedKey:
      return "untrusted key";
    case Failure::kBrokenChain:
      return "broken chain";
    case Failure::kExpiredCertificate:
      return "expired certificate";
    case Failure::kWrongUsage:
      return "wrong usage";
    case Failure::kIdentityMismatch:
      return "identity mismatch";
    case Failure::kTamperedFile:
      return "tampered file";
    case Failure::kMissingFile:
      return "missing file";
    case Failure::kUnlistedFile:
      return "unlisted file";
    case Failure::kNotCovered:
      return "not covered";
    case Failure::kUnsigned:
      return "unsigned";
  }
  return "?";
}

Failure FailureOf(const Status& status) {
  if (status.code() != StatusCode::kCorrupt && status.code() != StatusCode::kUnsupported) {
    return Failure::kNone;
  }
  const int d = status.detail();
  if (d <= 0 || d > static_cast<int>(Failure::kUnsigned)) return Failure::kNone;
  return static_cast<Failure>(d);
}

Status SignFailure(Failure failure, std::string message) {
  const StatusCode code =
      failure == Failure::kUnsupported ? StatusCode::kUnsupported : StatusCode::kCorrupt;
  return Status(code, std::move(message), static_cast<int>(failure));
}

}  // namespace carton::sign
