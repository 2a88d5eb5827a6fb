// The OpenSSF Model Signing (OMS) v1.0 bundle (sign/FORMAT.md "The
// bundle"): a Sigstore bundle (JSON, mediaType v0.3) whose DSSE envelope
// carries one ECDSA signature over the pre-authentication encoding of an
// in-toto Statement v1, the statement listing every file of a model with
// its sha256 and the root digest over them.
//
// ParseBundle takes untrusted bytes and checks every field before anything
// is returned; it does not check the signature (verify.h does, against
// trusted keys or roots). BundleJson and StatementJson write what
// ParseBundle reads. Plain values; the functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::sign {

inline constexpr std::string_view kBundleMediaType =
    "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr std::string_view kPayloadType = "application/vnd.in-toto+json";
inline constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kPredicateType = "https://model_signing/signature/v1.0";

// Limits on an untrusted bundle, each checked before what it bounds is
// built. Each file costs about 200 bytes of bundle (its line of the
// payload, base64-encoded), so the size limit holds some 300,000 files.
inline constexpr std::size_t kMaxBundleBytes = std::size_t{64} << 20;
// Nesting of objects and arrays, in the bundle and in its payload (the
// deepest valid one nests 6 levels: tlogEntries' inclusion proofs).
inline constexpr int kMaxJsonDepth = 16;
inline constexpr std::size_t kMaxResources = std::size_t{1} << 20;
inline constexpr std::size_t kMaxIgnorePaths = 4096;
// Certificates in a chain, the leaf included.
inline constexpr std::size_t kMaxCertificates = 8;
// A resource name or an ignore path, in bytes (Linux's PATH_MAX).
inline constexpr std::size_t kMaxNameBytes = 4096;
// A subject name or a key hint, in bytes.
inline constexpr std::size_t kMaxShortTextBytes = 1024;

// One file of the model: its path from the model's root ("/"-separated)
// and its sha256.
struct Resource {
  std::string name;
  manifest::Digest digest{};

  friend bool operator==(const Resource&, const Resource&) = default;
};

// What the signer states: the in-toto Statement's fields that OMS uses.
struct Statement {
  // Informational only (the model directory's name, the carton's name).
  std::string subject_name;
  // sha256 over the concatenated raw digests of `resources`, in order.
  manifest::Digest root_digest{};
  // In the order given (the reference sorts by path component; any order
  // verifies).
  std::vector<Resource> resources;
  // Paths the signer left out of the file list (serialization.ignore_paths).
  std::vector<std::string> ignore_paths;
  // serialization.allow_symlinks: symlinks were followed when listing.
  bool allow_symlinks = false;
};

enum class Method : std::uint8_t {
  kKey,          // verificationMaterial.publicKey
  kCertificate,  // verificationMaterial.x509CertificateChain
};

// "key", "certificate".
std::string_view MethodName(Method method);

struct Bundle {
  Method method = Method::kKey;
  // Key method: publicKey.hint (hex of the sha256 of the key's PEM
  // SubjectPublicKeyInfo text), "" when the bundle has only rawBytes.
  std::string key_hint;
  // Key method, older bundles: publicKey.rawBytes (a DER
  // SubjectPublicKeyInfo), empty when absent.
  std::vector<std::byte> raw_public_key;
  // Certificate method: DER certificates, the leaf first.
  std::vector<std::vector<std::byte>> certificates;
  // The DSSE payload, decoded: the exact bytes signed (through Pae).
  std::string payload;
  // The DER ECDSA signature (signatures[0].sig, decoded).
  std::vector<std::byte> signature;
  // The payload, parsed.
  Statement statement;
};

// The DSSE pre-authentication encoding:
// "DSSEv1 <len(type)> <type> <len(payload)> <payload>", lengths in decimal
// bytes. What the signature is computed over.
std::string Pae(std::string_view payload_type, std::string_view payload);

// sha256 over the concatenated raw digests of `resources`, in order.
manifest::Digest RootDigest(std::span<const Resource> resources);

// A statement for `resources` (root digest computed).
Statement MakeStatement(std::string subject_name, std::vector<Resource> resources,
                        std::vector<std::string> ignore_paths, bool allow_symlinks = false);

// The payload's JSON text: an in-toto Statement v1 with the OMS predicate.
std::string StatementJson(const Statement& statement);

// The bundle's JSON text (payload and signature base64-encoded; keyid "").
// REQUIRES: `bundle.payload` is StatementJson of its statement, or bytes
// ParseBundle accepted.
std::string BundleJson(const Bundle& bundle);

// Parses an OMS v1.0 bundle: untrusted input, every field checked, the
// payload decoded and parsed as the statement, whose root digest must be
// the one its resources give. Accepted beyond the current format, as the
// reference verifier accepts them: signatures[0].keyid absent, "" or null;
// publicKey.rawBytes instead of (or beside) hint; resources in any order.
// Errors: kCorrupt with Failure::kBadBundle (not JSON, over a limit, a
// missing field, a wrong type or value; the message names the field, e.g.
// "dsseEnvelope.signatures[0].sig: not base64"; payload fields as
// "payload.predicate.resources[3].name: ..."); kUnsupported with
// Failure::kUnsupported naming the field for what is valid but not
// supported yet: keyless (sigstore) bundles
// (verificationMaterial.certificate), transparency log entries and
// timestamps, serialization method "shards", other hash algorithms, other
// bundle versions, more than one signature.
Result<Bundle> ParseBundle(ByteView bytes);

// As ParseBundle, the payload alone (the statement's JSON text).
Result<Statement> ParseStatement(std::string_view payload);

}  // namespace carton::sign
