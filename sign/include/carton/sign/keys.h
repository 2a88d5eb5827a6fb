// ECDSA keys for OMS signatures: P-256 (signed over SHA-256), P-384
// (SHA-384) and P-521 (SHA-512), in PEM files (sign/FORMAT.md "Keys").
//
// A private key file is read only when its mode gives no access to group
// or others (as ssh reads its keys), and a passphrase-protected one asks
// for its passphrase through a PassphraseFn. Nothing here prints or logs a
// key. PublicKey and PrivateKey are immutable values sharing their OpenSSL
// key; copies may be used from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton::sign {

enum class Curve : std::uint8_t { kP256, kP384, kP521 };

// "P-256", "P-384", "P-521".
std::string_view CurveName(Curve curve);
// "p256", "P-256", "prime256v1", "secp256r1" (and the others' names).
// Errors: kInvalidArgument naming the three.
Result<Curve> ParseCurve(std::string_view name);

class PublicKey {
 public:
  // Parses a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) of one of the three
  // curves; untrusted. `source` names it in messages. Errors: kCorrupt (not
  // a PEM public key), kUnsupported (another key type or curve).
  static Result<PublicKey> FromPem(std::string_view pem, std::string_view source);
  // The same from a DER SubjectPublicKeyInfo (a bundle's rawBytes, a
  // certificate's key).
  static Result<PublicKey> FromDer(ByteView der, std::string_view source);
  // Reads a PEM public key file. Errors: kNotFound, kIoError, those of
  // FromPem.
  static Result<PublicKey> ReadFile(const std::string& path);

  Curve curve() const;
  // The key as PEM SubjectPublicKeyInfo text, as OpenSSL and Python's
  // cryptography write it.
  const std::string& pem() const;
  // The OMS key hint: 64 hex digits of the sha256 of pem().
  const std::string& hint() const;
  // The DER SubjectPublicKeyInfo.
  std::vector<std::byte> der() const;

  // True when `signature` (DER ECDSA) is this key's over `message`, hashed
  // with the curve's hash. Untrusted signature bytes.
  bool Verify(ByteView message, ByteView signature) const;

  friend bool operator==(const PublicKey& a, const PublicKey& b) { return a.pem() == b.pem(); }

  // The OpenSSL key, for this module's own files (sign/src/key_impl.h).
  struct Impl;
  explicit PublicKey(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// Asks for the passphrase of the key file `path`. Errors are returned as
// they are (kInvalidArgument when none can be had).
using PassphraseFn = std::function<Result<std::string>(const std::string& path)>;

// $CARTON_KEY_PASSPHRASE when it is set; else a prompt on the controlling
// terminal (/dev/tty, echo off) when there is one; else kInvalidArgument
// saying to set CARTON_KEY_PASSPHRASE.
PassphraseFn DefaultPassphrase();

// Refuses a private key file that its group or others may read or write
// (mode & 077), as ssh does: kInvalidArgument "<path>: permissions 0644 are
// too open: a private key must be readable by its owner only (chmod 600
// <path>)". Errors: kNotFound, kIoError.
Status CheckPrivateKeyFileMode(const std::string& path);

class PrivateKey {
 public:
  // A new key on `curve`.
  static Result<PrivateKey> Generate(Curve curve);
  // Parses a PEM private key ("PRIVATE KEY", "EC PRIVATE KEY", or
  // "ENCRYPTED PRIVATE KEY", whose passphrase `passphrase` gives, asked
  // only then). `source` names it in messages. Errors: kCorrupt (not a PEM
  // private key), kUnsupported (another key type or curve),
  // kInvalidArgument (a wrong passphrase, or none), those of `passphrase`.
  static Result<PrivateKey> FromPem(std::string_view pem, const std::string& source,
                                    const PassphraseFn& passphrase);
  // Reads a PEM private key file, its mode checked first
  // (CheckPrivateKeyFileMode). Errors: those of CheckPrivateKeyFileMode and
  // FromPem.
  static Result<PrivateKey> ReadFile(const std::string& path, const PassphraseFn& passphrase);

  Curve curve() const { return public_key_.curve(); }
  const PublicKey& public_key() const { return public_key_; }

  // The DER ECDSA signature of `message`, hashed with the curve's hash.
  // Errors: kInternal (OpenSSL failed).
  Result<std::vector<std::byte>> Sign(ByteView message) const;

  // The key as PKCS#8 PEM; encrypted (AES-256-CBC, PBKDF2) when
  // `passphrase` is not empty. The text is the secret: write it with mode
  // 0600 (WritePrivateKeyFile).
  Result<std::string> ToPem(std::string_view passphrase = {}) const;

  // The OpenSSL key, for this module's own files (sign/src/key_impl.h).
  struct Impl;
  PrivateKey(std::shared_ptr<const Impl> impl, PublicKey public_key)
      : impl_(std::move(impl)), public_key_(std::move(public_key)) {}

 private:
  std::shared_ptr<const Impl> impl_;
  PublicKey public_key_;
};

// Writes `pem` (a private key) to a new file at `path` with mode 0600,
// atomically; an existing file is not replaced (kInvalidArgument). Errors:
// kIoError.
Status WritePrivateKeyFile(const std::string& path, std::string_view pem);

}  // namespace carton::sign
