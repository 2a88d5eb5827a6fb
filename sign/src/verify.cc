// Checking an OMS bundle's signature and signer (sign/FORMAT.md
// "Verifying").
#include "carton/sign/verify.h"

#include <openssl/err.h>

#include <algorithm>
#include <ctime>

#include "carton/common/quote.h"
#include "carton/sign/failure.h"
#include "key_impl.h"

namespace carton::sign {
namespace {

constexpr std::string_view kChainField = "verificationMaterial.x509CertificateChain.certificates";

std::string Hints(const std::vector<PublicKey>& keys) {
  std::string out;
  for (const PublicKey& k : keys) out += (out.empty() ? "" : ", ") + k.hint();
  return out;
}

Result<SignerInfo> VerifyWithKeys(const Bundle& b, const TrustedSigners& trusted,
                                  const std::string& pae) {
  const std::string claimed = b.key_hint.empty() ? "(no hint)" : QuoteForMessage(b.key_hint, 80);
  if (trusted.keys.empty()) {
    return SignFailure(Failure::kUntrustedKey,
                       "signed with a key (hint " + claimed +
                           "), but only CA roots are trusted: verify it with a public key");
  }
  const ByteView message = AsBytes(pae);
  std::vector<const PublicKey*> named;
  for (const PublicKey& k : trusted.keys) {
    if ((!b.key_hint.empty() && k.hint() == b.key_hint) ||
        (!b.raw_public_key.empty() && k.der() == b.raw_public_key)) {
      named.push_back(&k);
    }
  }
  for (const PublicKey* k : named) {
    if (k->Verify(message, b.signature)) return SignerInfo{Method::kKey, k->hint(), ""};
  }
  if (!named.empty()) {
    return SignFailure(Failure::kBadSignature,
                       "the signature does not verify with trusted key " + named[0]->hint() +
                           ", which the bundle names: the payload or the signature was changed");
  }
  // A hint is only a hint: another tool may compute it otherwise.
  for (const PublicKey& k : trusted.keys) {
    if (k.Verify(message, b.signature)) return SignerInfo{Method::kKey, k.hint(), ""};
  }
  return SignFailure(Failure::kUntrustedKey,
                     "signed by key " + claimed +
                         ", which is not a trusted key (trusted: " + Hints(trusted.keys) + ")");
}

// The chain from `leaf` through `intermediates` to one of `roots`, valid
// at the time of the check.
Status VerifyChain(const Certificate& leaf, const std::vector<Certificate>& intermediates,
                   const TrustedSigners& trusted) {
  internal::StorePtr store(X509_STORE_new());
  internal::StackX509Ptr untrusted(sk_X509_new_null());
  internal::StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !untrusted || !ctx) return Internal("out of memory for the certificate check");
  for (const Certificate& r : trusted.roots) X509_STORE_add_cert(store.get(), r.impl().x509.get());
  for (const Certificate& c : intermediates) sk_X509_push(untrusted.get(), c.impl().x509.get());
  if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf.impl().x509.get(), untrusted.get()) != 1) {
    return Internal(internal::OpenSslError("cannot start the certificate check"));
  }
  // Every certificate in the roots file is a trust anchor (one may pin an
  // intermediate CA).
  X509_STORE_CTX_set_flags(ctx.get(), X509_V_FLAG_PARTIAL_CHAIN);
  if (trusted.at_time) X509_STORE_CTX_set_time(ctx.get(), 0, static_cast<time_t>(*trusted.at_time));
  const int ok = X509_verify_cert(ctx.get());
  ERR_clear_error();
  if (ok == 1) return Status::Ok();
  const int err = X509_STORE_CTX_get_error(ctx.get());
  const int depth = X509_STORE_CTX_get_error_depth(ctx.get());
  const std::string what = depth == 0 ? "the leaf certificate"
                                      : "certificate " + std::to_string(depth) + " of the chain";
  if (err == X509_V_ERR_CERT_HAS_EXPIRED || err == X509_V_ERR_CERT_NOT_YET_VALID) {
    return SignFailure(Failure::kExpiredCertificate,
                       what + " is not valid now: " + X509_verify_cert_error_string(err));
  }
  return SignFailure(Failure::kBrokenChain,
                     "the certificate chain does not lead to a trusted root: " + what + ": " +
                         X509_verify_cert_error_string(err));
}

Status CheckIdentity(const Certificate& leaf, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return Status::Ok();
  const std::vector<std::string> names = leaf.identities();
  for (const std::string& w : wanted) {
    if (std::find(names.begin(), names.end(), w) != names.end()) return Status::Ok();
  }
  std::string has;
  for (const std::string& n : names) has += (has.empty() ? "" : ", ") + QuoteForMessage(n);
  std::string asked;
  for (const std::string& w : wanted) asked += (asked.empty() ? "" : ", ") + QuoteForMessage(w);
  return SignFailure(
      Failure::kIdentityMismatch,
      "the leaf certificate names " + has + ", none of the identities asked for (" + asked + ")");
}

Result<std::vector<Certificate>> BundleCertificates(const Bundle& b) {
  std::vector<Certificate> certs;
  for (std::size_t i = 0; i < b.certificates.size(); ++i) {
    const std::string field = std::string(kChainField) + "[" + std::to_string(i) + "].rawBytes";
    auto c = Certificate::FromDer(b.certificates[i], field);
    if (!c.ok()) return SignFailure(Failure::kBadBundle, c.status().message());
    certs.push_back(std::move(*c));
  }
  return certs;
}

Result<SignerInfo> VerifyWithRoots(const Bundle& b, const TrustedSigners& trusted,
                                   const std::string& pae) {
  CARTON_ASSIGN_OR_RETURN(std::vector<Certificate> certs, BundleCertificates(b));
  const Certificate& leaf = certs.front();
  const std::string subject = leaf.subject();
  if (trusted.roots.empty()) {
    return SignFailure(Failure::kUntrustedKey,
                       "signed with a certificate (" + QuoteForMessage(subject) +
                           "), but only public keys are trusted: verify it with CA roots");
  }
  Result<PublicKey> key = leaf.public_key();
  if (!key.ok()) {
    return Status(
        key.status().code(), std::string(kChainField) + "[0]: " + key.status().message(),
        static_cast<int>(key.status().code() == StatusCode::kUnsupported ? Failure::kUnsupported
                                                                         : Failure::kBadBundle));
  }
  if (!key->Verify(AsBytes(pae), b.signature)) {
    return SignFailure(Failure::kBadSignature,
                       "the signature does not verify with the key of the leaf certificate (" +
                           QuoteForMessage(subject) +
                           "): the payload or the signature was changed");
  }
  CARTON_RETURN_IF_ERROR(VerifyChain(leaf, {certs.begin() + 1, certs.end()}, trusted));
  if (!leaf.AllowsCodeSigning()) {
    return SignFailure(Failure::kWrongUsage,
                       "the leaf certificate (" + QuoteForMessage(subject) +
                           ") is not for code signing: its KeyUsage, when present, must allow "
                           "digitalSignature, its ExtendedKeyUsage, when present, codeSigning, "
                           "and it must have one of the two");
  }
  CARTON_RETURN_IF_ERROR(CheckIdentity(leaf, trusted.identities));
  return SignerInfo{Method::kCertificate, "", subject};
}

}  // namespace

std::string SignerInfo::Describe() const {
  return method == Method::kKey ? "key " + key_hint : QuoteForMessage(subject);
}

Result<SignerInfo> VerifyBundle(const Bundle& bundle, const TrustedSigners& trusted) {
  if (trusted.empty()) return InvalidArgument("no trusted key or CA root to verify against");
  const std::string pae = Pae(kPayloadType, bundle.payload);
  return bundle.method == Method::kKey ? VerifyWithKeys(bundle, trusted, pae)
                                       : VerifyWithRoots(bundle, trusted, pae);
}

}  // namespace carton::sign
