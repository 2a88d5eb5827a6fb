// X.509 certificates for the OMS certificate method: a signing (leaf)
// certificate, the intermediates a bundle carries, and the CA roots a
// verifier trusts (sign/FORMAT.md "Certificates").
//
// Certificate is an immutable value sharing its OpenSSL certificate;
// copies may be used from several threads at once. Every certificate read
// from a bundle is untrusted until verify.h has checked its chain.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/sign/keys.h"

namespace carton::sign {

class Certificate {
 public:
  // Parses one DER certificate (untrusted). Errors: kCorrupt naming
  // `source`.
  static Result<Certificate> FromDer(ByteView der, std::string_view source);
  // Every "CERTIFICATE" block of PEM text, in order; at least one.
  // Errors: kCorrupt naming `source`.
  static Result<std::vector<Certificate>> FromPem(std::string_view pem, std::string_view source);
  // FromPem of a file. Errors: kNotFound, kIoError, those of FromPem.
  static Result<std::vector<Certificate>> ReadPemFile(const std::string& path);

  std::vector<std::byte> der() const;
  // The subject as one line, RFC 2253 ("CN=release,O=Example").
  std::string subject() const;
  // What an identity may match: the subject (as subject()), its common
  // names, and the subject alternative names' email addresses, URIs and
  // DNS names.
  std::vector<std::string> identities() const;
  // The certificate's key. Errors: kUnsupported (not an ECDSA key on
  // P-256, P-384 or P-521), kCorrupt.
  Result<PublicKey> public_key() const;
  // notBefore and notAfter, in seconds since 1970.
  std::int64_t not_before() const;
  std::int64_t not_after() const;
  // Whether the certificate says it may sign code: its KeyUsage, when
  // present, has digitalSignature, its ExtendedKeyUsage, when present,
  // has codeSigning, and at least one of the two is present (RFC 5280
  // 4.2.1.3 and 4.2.1.12: when both are present, both must allow the use).
  bool AllowsCodeSigning() const;

  // The OpenSSL certificate, for this module's own files
  // (sign/src/key_impl.h).
  struct Impl;
  explicit Certificate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace carton::sign
