// ECDSA keys (sign/FORMAT.md "Keys"): parsing, the hint, signing and
// verifying. The only file that sees OpenSSL's key objects; key material
// never reaches a message.
#include "carton/sign/keys.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"
#include "key_impl.h"
#include "openssl.h"

namespace carton::sign {

using internal::BioPtr;
using internal::MdCtxPtr;
using internal::PkeyPtr;

namespace {

const EVP_MD* HashOf(Curve curve) {
  switch (curve) {
    case Curve::kP256:
      return EVP_sha256();
    case Curve::kP384:
      return EVP_sha384();
    case Curve::kP521:
      return EVP_sha512();
  }
  return EVP_sha256();
}

const char* GroupOf(Curve curve) {
  switch (curve) {
    case Curve::kP256:
      return "P-256";
    case Curve::kP384:
      return "P-384";
    case Curve::kP521:
      return "P-521";
  }
  return "P-256";
}

// The curve of an EC key on one of the three; kUnsupported otherwise.
Result<Curve> CurveOf(EVP_PKEY* key, std::string_view source) {
  if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) {
    return Unsupported(std::string(source) + ": a " + EVP_PKEY_get0_type_name(key) +
                       " key; only ECDSA keys on P-256, P-384 and P-521 are supported");
  }
  char name[64] = {0};
  std::size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name), &len) !=
      1) {
    ERR_clear_error();
    return Unsupported(std::string(source) + ": an EC key without a named curve");
  }
  const std::string_view group(name, len);
  if (group == "prime256v1" || group == "P-256") return Curve::kP256;
  if (group == "secp384r1" || group == "P-384") return Curve::kP384;
  if (group == "secp521r1" || group == "P-521") return Curve::kP521;
  return Unsupported(std::string(source) + ": an EC key on " + std::string(group) +
                     "; only P-256, P-384 and P-521 are supported");
}

}  // namespace

std::string_view CurveName(Curve curve) { return GroupOf(curve); }

Result<Curve> ParseCurve(std::string_view name) {
  if (name == "p256" || name == "P-256" || name == "prime256v1" || name == "secp256r1") {
    return Curve::kP256;
  }
  if (name == "p384" || name == "P-384" || name == "secp384r1") return Curve::kP384;
  if (name == "p521" || name == "P-521" || name == "secp521r1") return Curve::kP521;
  return InvalidArgument("curve \"" + std::string(name) + "\": not p256, p384 or p521");
}

Result<PublicKey> internal::MakePublicKey(PkeyPtr key, std::string_view source) {
  auto impl = std::make_shared<PublicKey::Impl>();
  CARTON_ASSIGN_OR_RETURN(impl->curve, CurveOf(key.get(), source));
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PUBKEY(out.get(), key.get()) != 1) {
    return Internal(std::string(source) + ": " + OpenSslError("cannot write the public key"));
  }
  impl->pem = BioText(out.get());
  impl->hint = manifest::ToHex(manifest::Sha256Of(AsBytes(impl->pem)));
  impl->key = std::move(key);
  return PublicKey(std::move(impl));
}

Result<PublicKey> PublicKey::FromPem(std::string_view pem, std::string_view source) {
  BioPtr in = internal::MemoryBio(AsBytes(pem));
  PkeyPtr key(PEM_read_bio_PUBKEY(in.get(), nullptr, nullptr, nullptr));
  if (!key) {
    ERR_clear_error();
    return Corrupt(std::string(source) + ": not a PEM public key (\"BEGIN PUBLIC KEY\")");
  }
  return internal::MakePublicKey(std::move(key), source);
}

Result<PublicKey> PublicKey::FromDer(ByteView der, std::string_view source) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  PkeyPtr key(d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size())));
  if (!key || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    ERR_clear_error();
    return Corrupt(std::string(source) + ": not a DER SubjectPublicKeyInfo");
  }
  return internal::MakePublicKey(std::move(key), source);
}

Result<PublicKey> PublicKey::ReadFile(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(auto bytes, carton::ReadFile(path));
  return FromPem(AsChars(bytes), path);
}

Curve PublicKey::curve() const { return impl_->curve; }
const std::string& PublicKey::pem() const { return impl_->pem; }
const std::string& PublicKey::hint() const { return impl_->hint; }

std::vector<std::byte> PublicKey::der() const {
  return internal::Der(i2d_PUBKEY, impl_->key.get());
}

bool PublicKey::Verify(ByteView message, ByteView signature) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  const bool ok =
      ctx &&
      EVP_DigestVerifyInit(ctx.get(), nullptr, HashOf(impl_->curve), nullptr, impl_->key.get()) ==
          1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1;
  ERR_clear_error();
  return ok;
}

Result<PrivateKey> internal::MakePrivateKey(PkeyPtr key, std::string_view source) {
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PUBKEY(out.get(), key.get()) != 1) {
    return Internal(std::string(source) + ": " + OpenSslError("cannot write the public key"));
  }
  CARTON_ASSIGN_OR_RETURN(PublicKey pub, PublicKey::FromPem(BioText(out.get()), source));
  auto impl = std::make_shared<PrivateKey::Impl>();
  impl->key = std::move(key);
  return PrivateKey(std::move(impl), std::move(pub));
}

Result<PrivateKey> PrivateKey::Generate(Curve curve) {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", GroupOf(curve)));
  if (!key) return Internal(internal::OpenSslError("cannot generate a key"));
  return internal::MakePrivateKey(std::move(key), "the new key");
}

Result<std::vector<std::byte>> PrivateKey::Sign(ByteView message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  std::size_t len = 0;
  const auto* msg = reinterpret_cast<const unsigned char*>(message.data());
  if (!ctx ||
      EVP_DigestSignInit(ctx.get(), nullptr, HashOf(curve()), nullptr, impl_->key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, msg, message.size()) != 1) {
    return Internal(internal::OpenSslError("cannot sign"));
  }
  std::vector<std::byte> sig(len);
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, msg,
                     message.size()) != 1) {
    return Internal(internal::OpenSslError("cannot sign"));
  }
  sig.resize(len);
  return sig;
}

Result<std::string> PrivateKey::ToPem(std::string_view passphrase) const {
  BioPtr out(BIO_new(BIO_s_mem()));
  const EVP_CIPHER* cipher = passphrase.empty() ? nullptr : EVP_aes_256_cbc();
  std::string pass(passphrase);
  if (!out || PEM_write_bio_PKCS8PrivateKey(out.get(), impl_->key.get(), cipher,
                                            pass.empty() ? nullptr : pass.data(),
                                            static_cast<int>(pass.size()), nullptr, nullptr) != 1) {
    return Internal(internal::OpenSslError("cannot write the private key"));
  }
  return internal::BioText(out.get());
}

}  // namespace carton::sign
